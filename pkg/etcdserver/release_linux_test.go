package etcdserver

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// mappedKiB is how much of etcd's database file this process has mapped
// in (the Rss of its mapping in /proc/self/smaps).
func mappedKiB(t *testing.T, s *Server) int {
	t.Helper()
	info, err := os.Stat(s.etcd.Server.Cfg.BackendPath())
	if err != nil {
		t.Fatal(err)
	}
	ino := strconv.FormatUint(info.Sys().(*syscall.Stat_t).Ino, 10)
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = fields[4] == ino
			continue
		}
		if in && len(fields) >= 2 && fields[0] == "Rss:" {
			n, _ := strconv.Atoi(fields[1])
			return n
		}
	}
	t.Fatal("etcd's database is not mapped")
	return 0
}

func TestReleaseDBPages_UnmapsWhatReadsMappedInAndReadsStillWork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, stop, err := StartTemp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	const n, size = 1000, 4 << 10
	value := strings.Repeat("v", size)
	for i := 0; i < n; i++ {
		if _, err := s.Client().Put(ctx, fmt.Sprintf("/k/%04d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	// Reads of what is committed go to bbolt's mapping.
	s.etcd.Server.Backend().ForceCommit()
	readAll := func() {
		t.Helper()
		resp, err := s.Client().Get(ctx, "/k/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != n || string(resp.Kvs[n-1].Value) != value {
			t.Fatalf("read %d keys, want %d with their values", len(resp.Kvs), n)
		}
	}
	readAll()
	before := mappedKiB(t, s)
	if before < n*size/1024/2 {
		t.Fatalf("only %d KiB mapped after reading %d KiB", before, n*size/1024)
	}
	released, err := s.ReleaseDBPages()
	if err != nil {
		t.Fatal(err)
	}
	if after := mappedKiB(t, s); after > before/10 {
		t.Errorf("%d KiB still mapped of %d (released a range of %d bytes)", after, before, released)
	} else {
		t.Logf("mapped: %d KiB before, %d after", before, after)
	}
	readAll()
}
