// Package node is kube's Node authorization mode: it decides what
// kubelets may do, for users named system:node:<name> in the group
// system:nodes. Secrets, config maps, claims and volumes are readable
// only when a pod bound to the node uses them, and service account
// tokens only for the accounts of those pods, as a Graph of the stored
// pods and volumes tells; leases only in kube-node-lease under the
// node's name; everything else as kube's system:node role grants it.
// What it does not allow gets no opinion, so that RBAC may still allow
// it; other users get no opinion at all. The NodeRestriction admission
// plugin narrows the writes further to the node's own objects.
package node

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/authorizer/rbac"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

// Group is the group of every node's credentials.
const Group = "system:nodes"

// userPrefix starts a node's user name; the node's name follows.
const userPrefix = "system:node:"

// Identity tells whether u is a node and which: a user in the group
// system:nodes named system:node:<name>. A node whose name is empty
// cannot be told apart from the others (isNode, with name "").
func Identity(u *user.Info) (name string, isNode bool) {
	if u == nil || !strings.HasPrefix(u.Name, userPrefix) {
		return "", false
	}
	for _, g := range u.Groups {
		if g == Group {
			return strings.TrimPrefix(u.Name, userPrefix), true
		}
	}
	return "", false
}

// Authorizer is the Node authorization mode: Graph relates objects to
// nodes, Rules (kube's system:node role) grant what is not narrowed to
// the node's own objects.
type Authorizer struct {
	Graph *Graph
	Rules []rbacv1.PolicyRule
}

var (
	_ authorizer.Authorizer   = Authorizer{}
	_ authorizer.RuleResolver = Authorizer{}
)

// Authorize allows a node what kube's node authorizer allows it, and has
// no opinion (with kube's reason) on anything else.
func (z Authorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	node, isNode := Identity(a.User)
	if !isNode {
		return authorizer.NoOpinion, "", nil
	}
	if node == "" {
		return authorizer.NoOpinion, fmt.Sprintf("unknown node for user %q", a.User.Name), nil
	}
	if a.ResourceRequest {
		switch {
		case a.APIGroup == "" && a.Resource == "secrets":
			return z.read(node, Secret, a)
		case a.APIGroup == "" && a.Resource == "configmaps":
			return z.read(node, ConfigMap, a)
		case a.APIGroup == "" && a.Resource == "persistentvolumeclaims":
			if a.Subresource == "status" {
				return z.updateStatus(node, PersistentVolumeClaim, a)
			}
			return z.get(node, PersistentVolumeClaim, a)
		case a.APIGroup == "" && a.Resource == "persistentvolumes":
			return z.get(node, PersistentVolume, a)
		case a.APIGroup == "resource.k8s.io" && a.Resource == "resourceclaims",
			a.APIGroup == "storage.k8s.io" && a.Resource == "volumeattachments":
			// Not served: no object of these kinds is ever related.
			return z.get(node, unserved, a)
		case a.APIGroup == "" && a.Resource == "serviceaccounts":
			return z.createToken(node, a)
		case a.APIGroup == "coordination.k8s.io" && a.Resource == "leases":
			return lease(node, a)
		case a.APIGroup == "storage.k8s.io" && a.Resource == "csinodes":
			return csiNode(node, a)
		}
	}
	for i := range z.Rules {
		if rbac.RuleAllows(a, &z.Rules[i]) {
			return authorizer.Allow, "", nil
		}
	}
	return authorizer.NoOpinion, "", nil
}

// unserved stands for the kinds kube's graph has and cronplane does not
// serve.
const unserved Kind = -1

// read allows get, list and watch of one named object of the node's pods.
func (z Authorizer) read(node string, kind Kind, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch {
	case a.Verb != "get" && a.Verb != "list" && a.Verb != "watch":
		return authorizer.NoOpinion, "can only read resources of this type", nil
	case a.Subresource != "":
		return authorizer.NoOpinion, "cannot read subresource", nil
	case a.Namespace == "":
		return authorizer.NoOpinion, "can only read namespaced object of this type", nil
	}
	return z.related(node, kind, a)
}

// get allows get of one object of the node's pods.
func (z Authorizer) get(node string, kind Kind, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch {
	case a.Verb != "get":
		return authorizer.NoOpinion, "can only get individual resources of this type", nil
	case a.Subresource != "":
		return authorizer.NoOpinion, "cannot get subresource", nil
	}
	return z.related(node, kind, a)
}

// updateStatus allows updates and patches of the status of an object of
// the node's pods.
func (z Authorizer) updateStatus(node string, kind Kind, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.Verb != "update" && a.Verb != "patch" {
		return authorizer.NoOpinion, "can only get/update/patch this type", nil
	}
	return z.related(node, kind, a)
}

func (z Authorizer) related(node string, kind Kind, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.Name == "" {
		return authorizer.NoOpinion, "No Object name found", nil
	}
	if !z.Graph.Related(node, kind, a.Namespace, a.Name) {
		return authorizer.NoOpinion, fmt.Sprintf("no relationship found between node '%s' and this object", node), nil
	}
	return authorizer.Allow, "", nil
}

// createToken allows a token for the service account of a pod of the
// node (NodeRestriction checks that the token is bound to such a pod).
func (z Authorizer) createToken(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch {
	case a.Verb != "create" || a.Name == "":
		return authorizer.NoOpinion, "can only create tokens for individual service accounts", nil
	case a.Subresource != "token":
		return authorizer.NoOpinion, "can only create token subresource of serviceaccount", nil
	}
	return z.related(node, ServiceAccount, a)
}

// lease allows the node's own lease in kube-node-lease: get, update,
// patch and delete, and create, whose name NodeRestriction checks (it is
// in the body).
func lease(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch {
	case !ownVerb(a.Verb):
		return authorizer.NoOpinion, "can only get, create, update, patch, or delete a node lease", nil
	case a.Namespace != corev1.NamespaceNodeLease:
		return authorizer.NoOpinion, fmt.Sprintf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease), nil
	case a.Verb != "create" && a.Name != node:
		return authorizer.NoOpinion, "can only access node lease with the same name as the requesting node", nil
	}
	return authorizer.Allow, "", nil
}

// csiNode allows the node's own CSINode, as lease its lease.
func csiNode(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch {
	case !ownVerb(a.Verb):
		return authorizer.NoOpinion, "can only get, create, update, patch, or delete a CSINode", nil
	case a.Subresource != "":
		return authorizer.NoOpinion, "cannot authorize CSINode subresources", nil
	case a.Verb != "create" && a.Name != node:
		return authorizer.NoOpinion, "can only access CSINode with the same name as the requesting node", nil
	}
	return authorizer.Allow, "", nil
}

func ownVerb(verb string) bool {
	switch verb {
	case "get", "create", "update", "patch", "delete":
		return true
	}
	return false
}

// errNoRules is kube's answer to a rules review of a node.
var errNoRules = errors.New("node authorizer does not support user rule resolution")

// RulesFor cannot list a node's rules, which depend on its pods: for a
// node the answer is incomplete, as kube's.
func (z Authorizer) RulesFor(_ context.Context, u *user.Info, _ string) ([]rbacv1.PolicyRule, bool, error) {
	if _, isNode := Identity(u); isNode {
		return nil, true, errNoRules
	}
	return nil, false, nil
}
