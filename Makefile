# cronplane: a Kubernetes-compatible control plane.
GO ?= go
BIN := bin
DATA_DIR ?= .cronplane
PORT ?= 6443
# /version reports the commit, whether the tree had changes, and when the
# binaries were built.
VERSION_PKG := github.com/cronplane/cronplane/pkg/version
GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
GIT_TREE_STATE := $(shell if [ -z "$$(git status --porcelain 2>/dev/null)" ]; then echo clean; else echo dirty; fi)
BUILD_DATE := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X $(VERSION_PKG).gitCommit=$(GIT_COMMIT) -X $(VERSION_PKG).gitTreeState=$(GIT_TREE_STATE) -X $(VERSION_PKG).buildDate=$(BUILD_DATE)
GOFLAGS_BUILD := -trimpath -ldflags="$(LDFLAGS)"

# Tools the Makefile installs itself, pinned, into bin/tools.
TOOLS := $(abspath $(BIN)/tools)
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(TOOLS)/golangci-lint-$(GOLANGCI_LINT_VERSION)

.PHONY: all build run test test-short lint vet bench clean

all: build

build:
	CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o $(BIN)/ ./cmd/...

# Builds, starts the apiserver on an embedded etcd in $(DATA_DIR) and prints
# the kubectl command to use; Ctrl-C stops it.
run: build
	DATA_DIR=$(DATA_DIR) PORT=$(PORT) BIN=$(BIN) hack/run.sh

vet:
	$(GO) vet ./...

# vet, staticcheck, errcheck, gofmt/goimports and the import rules of
# .golangci.yml (controllers never import server code; storage knows no
# HTTP).
lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run ./...

$(GOLANGCI_LINT):
	GOBIN=$(TOOLS) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(TOOLS)/golangci-lint $@

test: lint
	$(GO) test -race -count=1 -timeout 20m ./...

# The quick loop: unit tests only, without the race detector or etcd.
test-short:
	$(GO) test -short -count=1 ./...

bench: build
	$(GO) run ./hack/bench -apiserver $(BIN)/apiserver
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/auth/authorizer/rbac

clean:
	rm -rf $(BIN)
