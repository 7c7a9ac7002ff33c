// Package rmtree removes and measures a directory tree that an untrusted
// program wrote, working only through file descriptors.
//
// It is for the session directory once every process of the sandbox is dead:
// a tree that may hold directories of mode 000 or 500, symbolic links to
// files and directories outside it, hundreds of thousands of small files,
// nesting deeper than PATH_MAX allows to name, and mount points. Removal
//
//   - never follows a symbolic link: the link is unlinked, its target is
//     untouched;
//   - never enters a mount point or a directory on another st_dev: that
//     subtree is left in place and reported with an *Error wrapping
//     ErrCrossDevice, while its siblings are still removed;
//   - makes a directory it must list or empty usable again (adds rwx for the
//     owner) through the descriptor it opened, never through a path;
//   - holds 64 directory descriptors (66 for an instant) and no Go stack
//     per level, whatever the depth;
//   - takes an entry that vanished meanwhile as removed.
//
// It is not for trees whose writers still run (entries created faster than
// one rescan per directory are reported, not chased), not for trees owned by
// another user when not root (their modes cannot be changed), not a secure
// erase, and not a path API: the caller opens the starting directory,
// verifying it as it sees fit, and passes the descriptor. The starting
// descriptor is never closed, and its file offset is never moved; it may be
// an O_PATH descriptor.
//
// Use:
//
//	root, err := unix.Open(rootPath, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
//	if err != nil {
//		return fmt.Errorf("open session root %s: %w", rootPath, err)
//	}
//	defer unix.Close(root)
//	bytes, files, _ := rmtree.Usage(root, id) // before, for the report
//	if err := rmtree.RemoveAt(root, id); err != nil {
//		if errors.Is(err, rmtree.ErrCrossDevice) {
//			// Something is still mounted inside the session: say so, keep the rest.
//		}
//		return fmt.Errorf("remove session %s: %w", id, err)
//	}
//
// A failure reads, for example,
//
//	fstat 1234/tmp/mnt: refusing to cross into another filesystem: on device 0:61, the tree is on 254:0; unmount it, then remove again
package rmtree
