// Package fserr is the one error type agentbox uses for a failure about a
// path: what the path is to agentbox, the path, the acting uid, what was seen
// there (kind, owner, mode), why agentbox refused or what the kernel said,
// and a remedy.
//
// It is for building and formatting such errors, and for the ErrUnsafe
// sentinel that callers branch on. It is not for deciding whether a path is
// safe (that is rootdir's job, and later the session packages'), and it makes
// no system calls: SeenFromStat only reads a stat buffer someone else filled,
// preferably from fstat on a descriptor that is then used.
//
// Use:
//
//	var st unix.Stat_t
//	if err := unix.Fstat(fd, &st); err != nil {
//		return &fserr.PathError{What: "session root", Path: p, UID: uid,
//			Err: os.NewSyscallError("fstat", err), Remedy: "pass --root DIR"}
//	}
//	if int(st.Uid) != uid {
//		return &fserr.PathError{What: "session root", Path: p, UID: uid,
//			Stat: fserr.SeenFromStat(&st), Err: fserr.ErrUnsafe,
//			Reason: "refusing a directory another user controls",
//			Remedy: "remove it or pass --root DIR"}
//	}
//
// which prints
//
//	session root /tmp/agentbox-1000: a directory owned by uid 1002, mode 0777 (you are uid 1000): refusing a directory another user controls; remove it or pass --root DIR
//
// and satisfies errors.Is(err, fserr.ErrUnsafe).
package fserr
