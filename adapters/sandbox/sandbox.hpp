// The decoder helper's confinement, installed by the helper itself once it has loaded its data:
// an empty environment and a seccomp filter (libseccomp). The limits (RLIMIT_AS, RLIMIT_CPU,
// RLIMIT_CORE, RLIMIT_FSIZE, RLIMIT_NOFILE) are set by helper_pool between fork and exec.
//
// The filter allows by default and refuses, with EPERM:
//   - the network: socket, socketpair, connect, bind, listen, accept, accept4;
//   - new programs and processes: execve, execveat, fork, vfork, clone without CLONE_THREAD
//     (threads stay allowed; clone3, whose flags a filter cannot read, answers ENOSYS so that
//     glibc falls back to clone);
//   - writing or creating files: open and openat with O_WRONLY, O_RDWR, O_CREAT, O_TRUNC or
//     O_TMPFILE (openat2 answers ENOSYS), creat, mknod, mkdir, rmdir, unlink, rename, link,
//     symlink, truncate, ftruncate, chmod, chown, utimes, the xattr writes, memfd_create;
//     read-only opens stay allowed (language data, fonts, locale files);
//   - other processes: kill, tgkill and rt_(tg)sigqueueinfo aimed at another process, tkill,
//     ptrace, process_vm_readv/writev, prlimit64 on another process, setpriority, kcmp,
//     pidfd_open, pidfd_getfd;
//   - the kernel's wider surface: mount, umount2, pivot_root, chroot, setns, unshare, bpf,
//     perf_event_open, keyctl, add_key, request_key, userfaultfd, io_uring_*, the module and
//     kexec calls, reboot, swapon/off, name_to_handle_at, open_by_handle_at, fanotify_init,
//     acct, quotactl, syslog, iopl, ioperm, personality.
// A system call of another architecture (the 32-bit ABI) kills the process.
//
// The office converter's profile (adapters/convert) keeps programs, processes and file writes
// (LibreOffice starts its own processes and writes its profile and the PDF; its user, mount, PID
// and network namespaces bound where) and refuses the network (sockets other than local ones,
// and connect), tracing and the kernel's wider surface as above.
#pragma once

#include "messages/result.hpp"

namespace ingestd::sandbox {

enum class filter_profile { decoder, converter };

/// Installs the filter above on the calling process (with no_new_privs). Errors name the step.
result<void> install_seccomp_filter(filter_profile profile = filter_profile::decoder);

/// Empties the process's environment.
void clear_environment();

} // namespace ingestd::sandbox
