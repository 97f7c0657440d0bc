package rbac

import (
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// The binding tables are kube's: the role, and with -o wide the subjects
// by kind. kube describes the Role column with the v1beta1 field's text.
var (
	roleBindingTable = &rest.TableSpec{
		Columns: bindingColumns(rbacv1beta1.RoleBinding{}.SwaggerDoc()["roleRef"], "roleBinding"),
		Cells: func(obj runtime.Object, now time.Time) []interface{} {
			rb := obj.(*rbacv1.RoleBinding)
			return bindingCells(&rb.ObjectMeta, rb.RoleRef, rb.Subjects, now)
		},
	}
	clusterRoleBindingTable = &rest.TableSpec{
		Columns: bindingColumns(rbacv1beta1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"], "clusterRoleBinding"),
		Cells: func(obj runtime.Object, now time.Time) []interface{} {
			crb := obj.(*rbacv1.ClusterRoleBinding)
			return bindingCells(&crb.ObjectMeta, crb.RoleRef, crb.Subjects, now)
		},
	}
)

func bindingColumns(roleDoc, what string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		rest.NameColumn,
		{Name: "Role", Type: "string", Description: roleDoc},
		rest.AgeColumn,
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the " + what},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the " + what},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the " + what},
	}
}

// bindingCells renders a binding's row. A service account shows as
// namespace/name, with an empty namespace when the subject has none.
func bindingCells(m *metav1.ObjectMeta, ref rbacv1.RoleRef, subjects []rbacv1.Subject, now time.Time) []interface{} {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	return []interface{}{m.Name, ref.Kind + "/" + ref.Name, rest.Age(m.CreationTimestamp, now),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}
