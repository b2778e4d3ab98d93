package main

// Volumes that are a file system of their own: with the StorageClass parameter
// stowage.test/filesystem: ext4, a volume is an ext4 image (<root>/volumes/<id>.img) attached to a
// loop device and mounted on the volume's directory. A pod with CAP_SYS_ADMIN can then fsfreeze its
// mount (the volume's own superblock, nothing of the host's), which a directory on the host's root
// file system cannot offer safely. Snapshots still tar the mounted files: reads work while frozen.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// KnobFilesystem is a StorageClass parameter (CreateVolume's parameters): "ext4" makes each volume its own file system.
const KnobFilesystem = "stowage.test/filesystem"

// minFilesystemBytes: below this mkfs.ext4 cannot fit a journal; such a claim is refused by name.
const minFilesystemBytes = 8 << 20

// fithaw is FITHAW, _IOWR('X', 120, int): golang.org/x/sys/unix does not name it.
const fithaw = 0xC0045878

// filesystemOf reads the class parameter: "" for a plain directory volume, "ext4", or an error naming the parameter.
func filesystemOf(params map[string]string, capacity int64) (string, error) {
	v, ok := params[KnobFilesystem]
	if !ok {
		return "", nil
	}
	if v != "ext4" {
		return "", status.Errorf(codes.InvalidArgument, "StorageClass parameter %s: %q is not a file system this driver makes (it makes ext4)", KnobFilesystem, v)
	}
	if capacity < minFilesystemBytes {
		return "", status.Errorf(codes.OutOfRange, "an ext4 volume needs at least %d bytes; the claim asks for %d", minFilesystemBytes, capacity)
	}
	return v, nil
}

func (s *store) volumeImage(id string) string { return s.volumeDir(id) + ".img" }

// makeFilesystemVolume makes the image, attaches and mounts it on the volume's directory (0777, as
// a directory volume is), and fills it; on failure it undoes all of that.
func (s *store) makeFilesystemVolume(id string, capacity int64, fill func(dir string) error) error {
	dir, img := s.volumeDir(id), s.volumeImage(id)
	// Leftovers of an attempt that died half way.
	if err := releaseFilesystem(dir, img); err != nil {
		return err
	}
	err := func() error {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		f, err := os.Create(img)
		if err != nil {
			return err
		}
		if err := errors.Join(f.Truncate(capacity), f.Close()); err != nil {
			return err
		}
		if _, err := command("mkfs.ext4", "-q", "-F", "-m", "0", img); err != nil {
			return err
		}
		dev, err := command("losetup", "--find", "--show", img)
		if err != nil {
			return err
		}
		if err := os.Mkdir(dir, 0o777); err != nil {
			return err
		}
		// noatime: reading a frozen volume (the snapshot does) must never want to write.
		if err := unix.Mount(dev, dir, "ext4", unix.MS_NOATIME, ""); err != nil {
			return fmt.Errorf("mount %s on %s: %w", dev, dir, err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			return err
		}
		return fill(dir)
	}()
	if err != nil {
		if undo := releaseFilesystem(dir, img); undo != nil {
			err = fmt.Errorf("%w (and undoing it: %v)", err, undo)
		}
		_ = os.RemoveAll(dir)
		return err
	}
	return nil
}

// releaseFilesystem thaws and unmounts the volume's directory, detaches every loop device of its
// image and removes the image. Safe to repeat; thawing only ever touches this volume's own mount.
func releaseFilesystem(dir, img string) error {
	mounted, err := isMountPoint(dir)
	if err != nil {
		return err
	}
	if mounted {
		thaw(dir)
		if err := unix.Unmount(dir, 0); err != nil {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
	}
	if _, err := os.Stat(img); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	devs, err := command("losetup", "--list", "--noheadings", "--output", "NAME", "--associated", img)
	if err != nil {
		return err
	}
	for _, dev := range strings.Fields(devs) {
		if _, err := command("losetup", "--detach", dev); err != nil {
			return err
		}
	}
	if err := os.Remove(img); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// thaw undoes a pod's fsfreeze that was never undone (its post hook did not run): a frozen file
// system cannot be unmounted for good, and its loop device stays busy. EINVAL (not frozen) is the usual answer.
func thaw(dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	_ = unix.IoctlSetInt(fd, fithaw, 0)
}

// command runs a host tool, giving its trimmed stdout or an error with its stderr.
func command(name string, args ...string) (string, error) {
	var stderr strings.Builder
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// createFilesystemVolume is CreateVolume's path for a file-system class (the store's lock is held).
func (d *driver) createFilesystemVolume(id string, req *csi.CreateVolumeRequest, capacity int64, fromSnapshot, fsType string) (*csi.CreateVolumeResponse, error) {
	s := d.store
	err := s.makeFilesystemVolume(id, capacity, func(dir string) error {
		if fromSnapshot == "" {
			return nil
		}
		return d.fillFromSnapshot(dir, fromSnapshot, capacity)
	})
	if err != nil {
		if _, ok := status.FromError(err); ok {
			return nil, err
		}
		return nil, status.Errorf(codes.Internal, "making the %s volume %s: %v", fsType, req.GetName(), err)
	}
	v := &volumeMeta{ID: id, Name: req.GetName(), Capacity: capacity, SourceSnapshot: fromSnapshot, Filesystem: fsType}
	if err := writeJSON(s.volumeMetaPath(id), v); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.CreateVolumeResponse{Volume: d.volumeOf(v, req.GetVolumeContentSource())}, nil
}
