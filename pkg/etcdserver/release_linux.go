package etcdserver

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ReleaseDBPages unmaps from this process the pages of etcd's database
// file that its reads mapped in, and reports how many bytes of mapping it
// went over. bbolt reads the file through a shared read-only mapping:
// every page a read touched (the previous revision of each written key,
// the pages a range from etcd reads) stays mapped and counts in the
// process's RSS, though it is the kernel's page cache, clean, which the
// kernel could drop at any time. After a mass delete those pages are most
// of the growth of RSS. Unmapping them costs a minor fault on the next
// read of each page.
func (s *Server) ReleaseDBPages() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, nil
	}
	// An open read transaction holds bbolt's mapping in place: neither a
	// remap (a database grown past it) nor a close (a defragmentation) can
	// move it while the pages are released.
	tx := s.etcd.Server.Backend().ConcurrentReadTx()
	tx.RLock()
	defer tx.RUnlock()
	path := s.etcd.Server.Cfg.BackendPath()
	info, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("no inode for %s", path)
	}
	start, end, err := mappingOf(st.Ino)
	if err != nil || start == end {
		return 0, err
	}
	// Past the file's end nothing is mapped in.
	page := int64(os.Getpagesize())
	end = min(end, start+uintptr((info.Size()+page-1)/page*page))
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, syscall.MADV_DONTNEED); errno != 0 {
		return 0, errno
	}
	return int64(end - start), nil
}

// mappingOf finds, in /proc/self/maps, the mapping of the file with inode
// ino (bbolt maps its file once, from offset 0).
func mappingOf(ino uint64) (start, end uintptr, err error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[2] != "00000000" || fields[4] != strconv.FormatUint(ino, 10) {
			continue
		}
		from, to, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		s, err1 := strconv.ParseUint(from, 16, 64)
		e, err2 := strconv.ParseUint(to, 16, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("bad line in /proc/self/maps: %q", sc.Text())
		}
		return uintptr(s), uintptr(e), nil
	}
	return 0, 0, sc.Err()
}
