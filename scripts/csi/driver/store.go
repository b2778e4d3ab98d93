package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// store keeps every volume and snapshot as files under one root, so the driver holds no state of
// its own across restarts and a test can look at a snapshot's data on the host:
//
//	volumes/<id>/            the volume's directory, bind-mounted into pods
//	volumes/<id>.json        its name and capacity
//	volumes/<id>.img         the ext4 image mounted on volumes/<id>/, for a stowage.test/filesystem class
//	snapshots/<id>.tar       the snapshot's data: a tar of the volume's directory
//	snapshots/<id>.json      its name, source, size, creation time, readiness and delete knob
//	snapshots/<id>.fail-delete  (written by a test) DeleteSnapshot fails with this file's text
type store struct {
	root string
	// One lock for all: calls are few, and it makes every create/delete atomic against the others.
	mu sync.Mutex
}

type volumeMeta struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Capacity int64  `json:"capacity"`
	// SourceSnapshot is the snapshot the volume was filled from, if any.
	SourceSnapshot string `json:"sourceSnapshot,omitempty"`
	// Filesystem is "ext4" for a volume that is its own image on a loop device (filesystem.go), else empty.
	Filesystem string `json:"filesystem,omitempty"`
}

type snapshotMeta struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	SourceVolume string    `json:"sourceVolume"`
	SizeBytes    int64     `json:"sizeBytes"`
	CreatedAt    time.Time `json:"createdAt"`
	ReadyAt      time.Time `json:"readyAt"`
	// FailDelete, when set, is the error DeleteSnapshot returns (the class parameter at creation).
	FailDelete string `json:"failDelete,omitempty"`
}

var idPattern = regexp.MustCompile(`^(vol|snap)-[0-9a-f]{20}$`)

// idFor derives a stable ID from the CSI name, so a repeated Create finds what the first one made.
func idFor(prefix, name string) string {
	sum := sha256.Sum256([]byte(name))
	return prefix + "-" + hex.EncodeToString(sum[:])[:20]
}

// validID refuses any ID this driver did not make: IDs become paths under the root.
func validID(id, prefix string) bool {
	return idPattern.MatchString(id) && strings.HasPrefix(id, prefix+"-")
}

func openStore(root string) (*store, error) {
	for _, d := range []string{"volumes", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return nil, err
		}
	}
	return &store{root: root}, nil
}

func (s *store) volumeDir(id string) string      { return filepath.Join(s.root, "volumes", id) }
func (s *store) volumeMetaPath(id string) string { return filepath.Join(s.root, "volumes", id+".json") }
func (s *store) snapshotTar(id string) string    { return filepath.Join(s.root, "snapshots", id+".tar") }
func (s *store) snapshotMetaPath(id string) string {
	return filepath.Join(s.root, "snapshots", id+".json")
}
func (s *store) failDeleteMarker(id string) string {
	return filepath.Join(s.root, "snapshots", id+".fail-delete")
}

func readJSON[T any](path string) (*T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &v, nil
}

// writeJSON writes through a temporary file and a rename: a crash never leaves half a record.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (s *store) volume(id string) (*volumeMeta, error) {
	return readJSON[volumeMeta](s.volumeMetaPath(id))
}

func (s *store) snapshot(id string) (*snapshotMeta, error) {
	return readJSON[snapshotMeta](s.snapshotMetaPath(id))
}

// snapshots lists every snapshot record, sorted by ID (ListSnapshots pages through this order).
func (s *store) snapshots() ([]*snapshotMeta, error) {
	entries, err := os.ReadDir(filepath.Join(s.root, "snapshots"))
	if err != nil {
		return nil, err
	}
	var out []*snapshotMeta
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !validID(id, "snap") {
			continue
		}
		m, err := s.snapshot(id)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// tarDir writes dir's files (regular files, directories, symlinks) to a tar at dest.
func tarDir(dir, dest string) error {
	tmp := dest + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	walkErr := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // sockets, fifos and devices are not data
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			src, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, src)
			src.Close()
			return err
		}
		return nil
	})
	closeErr := errors.Join(tw.Close(), f.Close())
	if err := errors.Join(walkErr, closeErr); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dest)
}

// untar fills dir (which exists and is empty) from the tar at src, refusing entries that leave dir.
func untar(src, dir string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(target, dir+string(os.PathSeparator)) {
			return fmt.Errorf("tar entry %q leaves the volume", h.Name)
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, mode); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		case tar.TypeReg:
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_EXCL, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if err := errors.Join(err, out.Close()); err != nil {
				return err
			}
		default:
			continue
		}
		// Owners matter: a pod running as a non-root user must still own what it wrote.
		if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
			return err
		}
		if h.Typeflag != tar.TypeSymlink {
			if err := os.Chmod(target, mode); err != nil {
				return err
			}
		}
	}
}
