# cronplane: a Kubernetes-compatible control plane.
GO ?= go
BIN := bin
DATA_DIR ?= .cronplane
PORT ?= 6443
GOFLAGS_BUILD := -trimpath -ldflags="-s -w"

.PHONY: all build run test vet bench clean

all: build

build:
	CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o $(BIN)/ ./cmd/...

# Builds, starts the apiserver on an embedded etcd in $(DATA_DIR) and prints
# the kubectl command to use; Ctrl-C stops it.
run: build
	DATA_DIR=$(DATA_DIR) PORT=$(PORT) BIN=$(BIN) hack/run.sh

vet:
	@out=$$(gofmt -l cmd pkg hack); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test: vet
	$(GO) test -race -count=1 -timeout 20m ./...

bench: build
	$(GO) run ./hack/bench -apiserver $(BIN)/apiserver

clean:
	rm -rf $(BIN)
