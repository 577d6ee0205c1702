package cmd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// outputSet is the files one run writes, each staged beside its path and put in place
// together by commit once the whole run has succeeded. Until then nothing under their
// paths changes: discard (or a failed commit) drops what was staged, so a failed or
// interrupted run writes none of its files and every old version stays as it was.
//
// On Linux a file is staged without a name (O_TMPFILE) and gets one only when it is
// complete, just before the renames, so even a run killed outright (SIGKILL, a second
// Ctrl-C) leaves nothing behind; elsewhere, or on a file system without O_TMPFILE, it is
// a hidden temporary file (".NAME.tmp-*") that discard removes.
type outputSet struct {
	files    []*stagedFile
	prepared bool
	// stale are files of an earlier run that commit removes once every staged file is
	// in place (see stageOutFiles), and, under root, the folders that leaves empty.
	stale []string
	root  string
	// made are the folders mkdirAll created for the staged files, parents first: discard
	// removes those left empty, so a failed run leaves no empty folder behind either.
	made []string
}

// mkdirAll creates dir and its missing parents for a staged file, remembering which it
// made.
func (s *outputSet) mkdirAll(dir string) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || !os.IsNotExist(err) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		s.made = append(s.made, missing[i])
	}
	return nil
}

type stagedFile struct {
	path string // where it goes
	size int64  // its bytes, when staged whole (add)
	f    *os.File
	temp string // its temporary name; "" while it has none
	w    *bufio.Writer
}

// create stages a file for path and returns the writer that fills it.
func (s *outputSet) create(path string) (io.Writer, error) {
	f, temp, err := stage(path)
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	sf := &stagedFile{path: path, f: f, temp: temp, w: bufio.NewWriterSize(f, 1<<16)}
	s.files = append(s.files, sf)
	s.prepared = false
	return sf.w, nil
}

// add stages a file for path that holds data.
func (s *outputSet) add(path string, data []byte) error {
	w, err := s.create(path)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	s.files[len(s.files)-1].size = int64(len(data))
	return nil
}

// stagedUnder counts the files staged under dir, but for the manifest, and their bytes.
func (s *outputSet) stagedUnder(dir string) (files int, bytes int64) {
	root := filepath.Clean(dir) + string(filepath.Separator)
	for _, sf := range s.files {
		if strings.HasPrefix(sf.path, root) && filepath.Base(sf.path) != manifestName {
			files++
			bytes += sf.size
		}
	}
	return files, bytes
}

// staged reports whether path is staged.
func (s *outputSet) staged(path string) bool {
	for _, sf := range s.files {
		if sf.path == path {
			return true
		}
	}
	return false
}

// stage opens the file that will become path: nameless where the system allows.
func stage(path string) (f *os.File, temp string, err error) {
	if f, err := openAnonymous(path); err == nil {
		return f, "", nil
	}
	f, err = os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, "", err
	}
	return f, f.Name(), nil
}

// prepare completes every staged file — written out, readable by others (0644), given
// a temporary name beside its path, closed — so that what remains of commit is renames.
// It reports the first failure (a full disk shows here at the latest).
func (s *outputSet) prepare() error {
	if s.prepared {
		return nil
	}
	for _, sf := range s.files {
		if sf.f == nil {
			continue
		}
		err := sf.w.Flush()
		if err == nil {
			// A temporary file is private (0600); results are for others to read too.
			err = sf.f.Chmod(0o644)
		}
		if err == nil && sf.temp == "" {
			sf.temp, err = linkAnonymous(sf.f, sf.path)
		}
		if cerr := sf.f.Close(); err == nil {
			err = cerr
		}
		sf.f = nil
		if err != nil {
			return fmt.Errorf("writing %s: %w", sf.path, err)
		}
	}
	s.prepared = true
	return nil
}

// commit prepares every staged file and renames each over its path. Any failure before
// the renames writes nothing. What is not in place when it returns is discarded.
func (s *outputSet) commit() error {
	defer s.discard()
	if err := s.prepare(); err != nil {
		return err
	}
	for _, sf := range s.files {
		if err := os.Rename(sf.temp, sf.path); err != nil {
			return fmt.Errorf("writing %s: %w", sf.path, err)
		}
		sf.temp = ""
	}
	s.files, s.made = nil, nil
	for _, path := range s.stale {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("removing %s, a file of the run before: %w", path, err)
		}
		// Folders the removal empties go too, up to the results folder (never beyond,
		// and never one that holds anything else).
		for dir := filepath.Dir(path); s.root != "" && dir != s.root && strings.HasPrefix(dir, s.root+string(filepath.Separator)); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break
			}
		}
	}
	s.stale = nil
	return nil
}

// discard drops every staged file that is not in place — closing a nameless one frees
// it, a named one is removed — and returns their paths.
func (s *outputSet) discard() []string {
	var dropped []string
	for _, sf := range s.files {
		if sf.f != nil {
			sf.f.Close()
		}
		if sf.temp != "" {
			os.Remove(sf.temp)
		}
		dropped = append(dropped, sf.path)
	}
	for i := len(s.made) - 1; i >= 0; i-- {
		os.Remove(s.made[i]) // only an empty folder goes: one someone filled meanwhile stays
	}
	s.files, s.prepared, s.made = nil, false, nil
	return dropped
}
