//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockBlob takes the download lock of a blob: an exclusive flock on
// .locks/models--ORG--REPO/ETAG.lock, the file and the kind of lock
// huggingface_hub's FileLock takes, so that bitvk and Python never write
// the same .incomplete file at once. It calls waiting once if another
// process holds the lock, and waits until that one lets go or ctx ends.
func lockBlob(ctx context.Context, path string, waiting func()) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return nil, fmt.Errorf("%w (set HF_HUB_CACHE to a folder you can write)", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("%w (set HF_HUB_CACHE to a folder you can write)", err)
	}
	told := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if !told && waiting != nil {
			waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
