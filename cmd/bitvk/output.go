package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// checkOutput checks, before a command does any work, that path can take
// its output: the directory it goes in exists, path is not a directory,
// and path is none of the command's inputs (replacing one would destroy
// what the command reads). flag names the option, as the user typed it.
// The writers replace a file only once the new one is complete, so these
// are the mistakes that would otherwise surface after the work, as a
// rename error naming a temporary file, or not at all.
func checkOutput(flag, path string, inputs ...string) error {
	dir := filepath.Dir(path)
	switch st, err := os.Stat(dir); {
	case os.IsNotExist(err):
		return fmt.Errorf("%s %s: the output directory %s does not exist (create it first)", flag, path, dir)
	case err != nil:
		return fmt.Errorf("%s %s: %w", flag, path, err)
	case !st.IsDir():
		return fmt.Errorf("%s %s: %s is not a directory", flag, path, dir)
	}
	st, err := os.Stat(path)
	if os.IsNotExist(err) {
		return nil // a new file cannot be an input
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if st.IsDir() {
		return fmt.Errorf("%s %s is a directory: give the name of the file to write", flag, path)
	}
	for _, in := range inputs {
		if in == "" || in == "-" {
			continue
		}
		if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
			return fmt.Errorf("%s %s is also an input of this command (%s): writing it would destroy what is read; choose another output file", flag, path, in)
		}
	}
	return nil
}

// checkFits refuses an output of size bytes where the file system that
// would hold it has less room left (where that can be told).
func checkFits(flag, path string, size uint64) error {
	if free, ok := freeBytes(filepath.Dir(path)); ok && size > free {
		return fmt.Errorf("%s %s: the file would take %s, but only %s are free there", flag, path, humanBytes(size), humanBytes(free))
	}
	return nil
}

// checkOutputDir is checkOutput for an output that is a directory the
// command fills (train --hf-out): it may exist, as a directory, or be
// created in a directory that exists.
func checkOutputDir(flag, path string) error {
	st, err := os.Stat(path)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("%s %s is a file, not a directory: give a directory to write into", flag, path)
	case err == nil:
		return nil
	case !os.IsNotExist(err):
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	parent := filepath.Dir(filepath.Clean(path))
	if pst, err := os.Stat(parent); err != nil || !pst.IsDir() {
		return fmt.Errorf("%s %s: the directory %s does not exist (create it first)", flag, path, parent)
	}
	return nil
}
