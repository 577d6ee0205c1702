package cmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// procFD says whether /proc/self/fd is there: linkAnonymous names a file through it.
var procFD = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/fd")
	return err == nil
})

// openAnonymous opens a file without a name in path's folder (O_TMPFILE): the kernel
// frees it when it is closed or the process dies, unless linkAnonymous has given it a
// name. Errors name it by path.
func openAnonymous(path string) (*os.File, error) {
	if !procFD() {
		return nil, errors.ErrUnsupported
	}
	fd, err := unix.Open(filepath.Dir(path), unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// linkAnonymous gives f, opened by openAnonymous, a hidden name beside path and returns
// that name.
func linkAnonymous(f *os.File, path string) (string, error) {
	proc := "/proc/self/fd/" + strconv.FormatUint(uint64(f.Fd()), 10)
	for i := 0; ; i++ {
		name := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.tmp-%d-%d", filepath.Base(path), os.Getpid(), i))
		err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, name, unix.AT_SYMLINK_FOLLOW)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, unix.EEXIST) || i == 100 {
			return "", &os.LinkError{Op: "link", Old: proc, New: name, Err: err}
		}
	}
}
