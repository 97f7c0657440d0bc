# cronplane: a Kubernetes-compatible control plane.
GO ?= go
BIN := bin
DATA_DIR ?= .cronplane
PORT ?= 6443
# /version reports the Kubernetes release whose API is served (kubectl
# picks its client release by it), the commit, whether the tree had
# changes (also marked in gitVersion, as kube marks it), and when the
# binaries were built.
VERSION_PKG := github.com/cronplane/cronplane/pkg/version
GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
GIT_TREE_STATE := $(shell if [ -z "$$(git status --porcelain 2>/dev/null)" ]; then echo clean; else echo dirty; fi)
GIT_VERSION := v1.29.15-cronplane$(if $(filter dirty,$(GIT_TREE_STATE)),-dirty)
BUILD_DATE := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X $(VERSION_PKG).gitVersion=$(GIT_VERSION) -X $(VERSION_PKG).gitCommit=$(GIT_COMMIT) -X $(VERSION_PKG).gitTreeState=$(GIT_TREE_STATE) -X $(VERSION_PKG).buildDate=$(BUILD_DATE)
GOFLAGS_BUILD := -trimpath -ldflags="$(LDFLAGS)"

# Tools the Makefile installs itself, pinned, into bin/tools.
TOOLS := $(abspath $(BIN)/tools)
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(TOOLS)/golangci-lint-$(GOLANGCI_LINT_VERSION)

.PHONY: all build run test test-short lint vet bench bench-compare clean images agnhost-image pki up down logs rollout e2e

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

# BENCH_ARGS passes flags to hack/bench, e.g. -kubeconfig k -pids 1,2 to
# measure a server already running.
BENCH_ARGS ?=
bench: build
	$(GO) run ./hack/bench -apiserver $(BIN)/apiserver $(BENCH_ARGS)
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/auth/authorizer/rbac ./pkg/cel ./pkg/admission/plugin/webhook

# The same scenarios against kube-apiserver v1.29 from ../shared/reference
# (skipped with a message when it is not built) and cronplane, in turns;
# prints both figures, their ratio, median of RUNS runs (1 for a quick look).
RUNS ?= 3
bench-compare: build
	$(GO) run ./hack/bench -compare -runs $(RUNS) -apiserver $(BIN)/apiserver -controller-manager $(BIN)/controller-manager $(BENCH_ARGS)

# The compose cluster (docker-compose.yaml): images built from local
# binaries, FROM scratch; the PKI and kubeconfigs in $(CLUSTER_DIR).
CLUSTER_DIR := .cluster
COMPOSE ?= docker-compose
# The compose project: its containers, networks and volumes are named
# after it, and so is the network the node agents attach the pods to.
COMPOSE_PROJECT_NAME ?= cronplane
export COMPOSE_PROJECT_NAME
# The node agents' --root-dir (a directory per node): the pods' volumes,
# which the engine bind-mounts from the host, so it is the same path on
# the host and in the agents.
NODE_ROOT_DIR ?= /var/lib/cronplane-node/$(COMPOSE_PROJECT_NAME)
export NODE_ROOT_DIR
COMPOSE_CMD := $(COMPOSE) -p $(COMPOSE_PROJECT_NAME) --env-file deploy/runtime-config.env
IMAGE_CONTEXT := $(BIN)/images
# The pods' busybox: Debian's busybox-static, tagged as the upstream e2e
# specs (k8s.io/kubernetes v1.29 test/utils/image) name it too.
BUSYBOX_TAGS := busybox registry.k8s.io/e2e-test-images/busybox:1.36.1-1
BUSYBOX := $(IMAGE_CONTEXT)/busybox/bin/busybox
# The pause image the upstream specs name, built on that busybox.
PAUSE_TAG := registry.k8s.io/pause:3.9
# The load balancer in front of the apiservers: Debian's haproxy, which the
# build host provides (apt-get install haproxy), with the libraries ldd
# names, copied at their paths into the image's root.
HAPROXY_BIN := /usr/sbin/haproxy
HAPROXY := $(IMAGE_CONTEXT)/haproxy$(HAPROXY_BIN)

images: $(BUSYBOX) $(HAPROXY)
	mkdir -p $(IMAGE_CONTEXT)/empty
	CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -tags timetzdata -o $(IMAGE_CONTEXT)/ ./cmd/apiserver ./cmd/controller-manager ./cmd/node-agent
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w" -o $(IMAGE_CONTEXT)/etcd go.etcd.io/etcd/server/v3
	cp /etc/ssl/certs/ca-certificates.crt $(IMAGE_CONTEXT)/
	for image in apiserver controller-manager etcd node-agent lb; do \
		docker build -q -t cronplane/$$image -f deploy/images/$$image.Dockerfile $(IMAGE_CONTEXT) || exit 1; \
	done
	docker build -q $(addprefix -t ,$(BUSYBOX_TAGS)) -f deploy/images/busybox.Dockerfile $(IMAGE_CONTEXT)/busybox
	docker build -q -t $(PAUSE_TAG) -f deploy/images/pause.Dockerfile $(IMAGE_CONTEXT)/empty

# agnhost for the upstream specs (../shared/reference/e2e.sh) on the
# compose cluster, built from the Kubernetes module the reference build
# fetched; tagged as k8s.io/kubernetes v1.29 test/utils/image names it.
# Not part of `make images`: it needs the reference build.
AGNHOST_MODULE ?= $(HOME)/.cache/cronplane-reference/src/kube
AGNHOST_TAG := registry.k8s.io/e2e-test-images/agnhost:2.47

agnhost-image: images
	mkdir -p $(IMAGE_CONTEXT)/agnhost
	cd $(AGNHOST_MODULE) && GOFLAGS=-mod=mod CGO_ENABLED=0 $(GO) build -o $(abspath $(IMAGE_CONTEXT))/agnhost/agnhost k8s.io/kubernetes/test/images/agnhost
	docker build -q -t $(AGNHOST_TAG) -f deploy/images/agnhost.Dockerfile $(IMAGE_CONTEXT)/agnhost

$(BUSYBOX):
	rm -rf $(IMAGE_CONTEXT)/busybox-deb && mkdir -p $(IMAGE_CONTEXT)/busybox-deb
	cd $(IMAGE_CONTEXT)/busybox-deb && apt-get download busybox-static
	dpkg-deb -x $(IMAGE_CONTEXT)/busybox-deb/busybox-static_*.deb $(IMAGE_CONTEXT)/busybox

$(HAPROXY): $(HAPROXY_BIN)
	rm -rf $(IMAGE_CONTEXT)/haproxy && mkdir -p $(IMAGE_CONTEXT)/haproxy
	cp -L --parents $(HAPROXY_BIN) $$(ldd $(HAPROXY_BIN) | grep -o '/[^ ]*') $(IMAGE_CONTEXT)/haproxy/

$(HAPROXY_BIN):
	@echo "the load balancer's image is Debian's haproxy: apt-get install haproxy" >&2; exit 1

pki:
	$(GO) run ./hack/pki -dir $(CLUSTER_DIR)

# Starts the cluster and waits until both apiservers are ready.
up: images pki
	$(COMPOSE_CMD) up -d
	COMPOSE="$(COMPOSE_CMD)" KUBECONFIG=$(CLUSTER_DIR)/admin.kubeconfig hack/cluster-wait.sh

# The node agents first, then the pods' containers they left (labelled by
# the agents and found by node: a pod's containers share its sandbox's
# network namespace, so only sandboxes are on the cluster network), then
# the rest.
down:
	$(COMPOSE_CMD) stop node-0 node-1
	for n in node-0 node-1; do docker ps -aq --filter label=io.cronplane.node-agent --filter label=io.cronplane.node=$$n | xargs -r docker rm -f; done
	$(COMPOSE_CMD) down -v --remove-orphans

logs:
	$(COMPOSE_CMD) logs --tail=200

# Restarts apiserver-0, waits until it is ready, then apiserver-1, then
# the controller-managers: after a change to deploy/runtime-config.env.
rollout:
	COMPOSE="$(COMPOSE_CMD)" KUBECONFIG=$(CLUSTER_DIR)/admin.kubeconfig hack/rollout.sh

# The fault suite against the compose cluster; it brings the cluster up
# and always down.
e2e: images pki
	COMPOSE="$(COMPOSE_CMD)" CLUSTER_DIR=$(abspath $(CLUSTER_DIR)) $(GO) test -tags e2e -count=1 -timeout 15m -v ./e2e/...

clean:
	rm -rf $(BIN)
