package authenticator

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, content string) string {
	p := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadTokenFile_ReadsKubeFormat(t *testing.T) {
	set, err := LoadTokenFile(writeFile(t, "admin-token,admin,admin-uid,\"system:masters,ops\"\n\nalice-token,alice,alice-uid\n"))
	if err != nil {
		t.Fatal(err)
	}
	u, ok, _ := set.AuthenticateToken(context.Background(), "admin-token")
	if !ok || u.Name != "admin" || u.UID != "admin-uid" || !reflect.DeepEqual(u.Groups, []string{"system:masters", "ops"}) {
		t.Fatalf("admin: %+v", u)
	}
	if u, ok, _ := set.AuthenticateToken(context.Background(), "alice-token"); !ok || u.Name != "alice" || len(u.Groups) != 0 {
		t.Fatalf("alice: %+v", u)
	}
}

func TestLoadTokenFile_RejectsShortLines(t *testing.T) {
	_, err := LoadTokenFile(writeFile(t, "tok,user\n"))
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("want an error naming line 1, got %v", err)
	}
}
