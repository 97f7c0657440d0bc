package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"

	jsonpatch "github.com/evanphx/json-patch"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/cronplane/cronplane/pkg/registry"
)

// patchTypes are the PATCH content types served.
var patchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType)}

// patch applies a JSON, merge or strategic merge patch to the current
// object inside the store's update loop, so that a concurrent write makes
// it re-apply to the new state; the result goes through the same checks as
// a PUT.
func (c *call) patch() {
	dryRun, err := registry.IsDryRun(c.r.URL.Query()["dryRun"])
	if err != nil {
		c.fail(err)
		return
	}
	mt, _, err := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if err != nil || !contains(patchTypes, mt) {
		c.fail(errUnsupportedMediaType(c.r.Header.Get("Content-Type"), patchTypes...))
		return
	}
	patch, err := readBody(c.r)
	if err != nil {
		c.fail(err)
		return
	}
	out, _, err := c.store.Update(c.r.Context(), c.namespace, c.info.Name, c.info.Subresource,
		func(_ context.Context, current runtime.Object) (runtime.Object, error) {
			if current == nil {
				return nil, apierrors.NewNotFound(c.store.Resource.GroupResource(), c.info.Name)
			}
			return c.applyPatch(types.PatchType(mt), current, patch)
		}, registry.WriteOptions{DryRun: dryRun})
	if err != nil {
		c.fail(err)
		return
	}
	c.respond(http.StatusOK, out)
}

func (c *call) applyPatch(pt types.PatchType, current runtime.Object, patch []byte) (runtime.Object, error) {
	original, err := json.Marshal(current)
	if err != nil {
		return nil, err
	}
	var patched []byte
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if patched, err = p.Apply(original); err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", c.store.Resource.GroupResource(), c.info.Name, err.Error(), 0, false)
		}
	case types.MergePatchType:
		if patched, err = jsonpatch.MergePatch(original, patch); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	case types.StrategicMergePatchType:
		if patched, err = strategicpatch.StrategicMergePatch(original, patch, c.store.Resource.New()); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	default:
		return nil, fmt.Errorf("unsupported patch type %s", pt)
	}
	return c.decodeJSON(patched)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
