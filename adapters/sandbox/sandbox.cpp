// The helper's seccomp filter (see sandbox.hpp for what it refuses and why).
#include "adapters/sandbox/sandbox.hpp"

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <memory>
#include <sched.h>
#include <seccomp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ingestd::sandbox {

namespace {

struct filter_deleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};

error failed(const char* step, int rc) {
  return error::make_permanent("sandbox.seccomp", std::string{"seccomp: "} + step + " failed ("
                                                      + std::to_string(-rc) + ")");
}

/// The decoder's rules beyond the converter's: no new programs or processes (threads are clones
/// with CLONE_THREAD), no file written, signals only to itself.
template <class Add>
void add_decoder_rules(Add& add, uint32_t refuse) {
  for (int sc : {SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(fork), SCMP_SYS(vfork)})
    add(refuse, sc);
  add(refuse, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  add(SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3));

  // Files: read-only opens only, nothing created, written, renamed or removed.
  for (uint64_t flag : {uint64_t{O_WRONLY}, uint64_t{O_RDWR}, uint64_t{O_CREAT}, uint64_t{O_TRUNC},
                        uint64_t{__O_TMPFILE}}) {
    add(refuse, SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, flag, flag));
    add(refuse, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, flag, flag));
  }
  add(SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2));
  for (int sc : {SCMP_SYS(creat),        SCMP_SYS(mknod),       SCMP_SYS(mknodat),
                 SCMP_SYS(mkdir),        SCMP_SYS(mkdirat),     SCMP_SYS(rmdir),
                 SCMP_SYS(unlink),       SCMP_SYS(unlinkat),    SCMP_SYS(rename),
                 SCMP_SYS(renameat),     SCMP_SYS(renameat2),   SCMP_SYS(link),
                 SCMP_SYS(linkat),       SCMP_SYS(symlink),     SCMP_SYS(symlinkat),
                 SCMP_SYS(truncate),     SCMP_SYS(ftruncate),   SCMP_SYS(chmod),
                 SCMP_SYS(fchmod),       SCMP_SYS(fchmodat),    SCMP_SYS(chown),
                 SCMP_SYS(fchown),       SCMP_SYS(lchown),      SCMP_SYS(fchownat),
                 SCMP_SYS(utime),        SCMP_SYS(utimes),      SCMP_SYS(utimensat),
                 SCMP_SYS(futimesat),    SCMP_SYS(setxattr),    SCMP_SYS(lsetxattr),
                 SCMP_SYS(fsetxattr),    SCMP_SYS(removexattr), SCMP_SYS(lremovexattr),
                 SCMP_SYS(fremovexattr), SCMP_SYS(memfd_create)})
    add(refuse, sc);

  // Other processes: signals only to itself, no limits or priorities of others.
  auto self = static_cast<uint64_t>(::getpid());
  add(refuse, SCMP_SYS(kill), 1, SCMP_A0(SCMP_CMP_NE, self));
  add(refuse, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_NE, self));
  add(refuse, SCMP_SYS(rt_sigqueueinfo), 1, SCMP_A0(SCMP_CMP_NE, self));
  add(refuse, SCMP_SYS(rt_tgsigqueueinfo), 1, SCMP_A0(SCMP_CMP_NE, self));
  add(refuse, SCMP_SYS(prlimit64), 1, SCMP_A0(SCMP_CMP_NE, 0));
  for (int sc :
       {SCMP_SYS(tkill), SCMP_SYS(setpriority), SCMP_SYS(pidfd_open), SCMP_SYS(pidfd_send_signal)})
    add(refuse, sc);
}

} // namespace

result<void> install_seccomp_filter(filter_profile profile) {
  const bool decoder = profile == filter_profile::decoder;
  std::unique_ptr<void, filter_deleter> owner{seccomp_init(SCMP_ACT_ALLOW)};
  if (!owner)
    return failed("init", -ENOMEM);
  auto* ctx = owner.get();
  const auto refuse = SCMP_ACT_ERRNO(EPERM);
  int rc = 0;
  auto add
      = [&](uint32_t action, int syscall, unsigned count = 0, scmp_arg_cmp a = scmp_arg_cmp{}) {
          if (rc != 0)
            return;
          // A call this kernel's table does not know (__NR_SCMP_ERROR) has nothing to refuse.
          if (syscall < 0)
            return;
          rc = count == 0 ? seccomp_rule_add(ctx, action, syscall, 0)
                          : seccomp_rule_add(ctx, action, syscall, 1, a);
        };

  // The network. A converter keeps local sockets of its own (LibreOffice's pipe between its
  // processes) but connects to none.
  if (decoder) {
    for (int sc : {SCMP_SYS(socket), SCMP_SYS(socketpair), SCMP_SYS(connect), SCMP_SYS(bind),
                   SCMP_SYS(listen), SCMP_SYS(accept), SCMP_SYS(accept4)})
      add(refuse, sc);
    add_decoder_rules(add, refuse);
  } else {
    add(refuse, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
    add(refuse, SCMP_SYS(connect));
  }

  // Other processes: no tracing, no reading or writing their memory.
  for (int sc : {SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
                 SCMP_SYS(kcmp), SCMP_SYS(pidfd_getfd)})
    add(refuse, sc);

  // The kernel's wider surface.
  for (int sc : {SCMP_SYS(mount),
                 SCMP_SYS(umount2),
                 SCMP_SYS(pivot_root),
                 SCMP_SYS(chroot),
                 SCMP_SYS(setns),
                 SCMP_SYS(unshare),
                 SCMP_SYS(bpf),
                 SCMP_SYS(perf_event_open),
                 SCMP_SYS(keyctl),
                 SCMP_SYS(add_key),
                 SCMP_SYS(request_key),
                 SCMP_SYS(userfaultfd),
                 SCMP_SYS(io_uring_setup),
                 SCMP_SYS(io_uring_enter),
                 SCMP_SYS(io_uring_register),
                 SCMP_SYS(init_module),
                 SCMP_SYS(finit_module),
                 SCMP_SYS(delete_module),
                 SCMP_SYS(kexec_load),
                 SCMP_SYS(kexec_file_load),
                 SCMP_SYS(reboot),
                 SCMP_SYS(swapon),
                 SCMP_SYS(swapoff),
                 SCMP_SYS(name_to_handle_at),
                 SCMP_SYS(open_by_handle_at),
                 SCMP_SYS(fanotify_init),
                 SCMP_SYS(acct),
                 SCMP_SYS(quotactl),
                 SCMP_SYS(syslog),
                 SCMP_SYS(iopl),
                 SCMP_SYS(ioperm),
                 SCMP_SYS(personality)})
    add(refuse, sc);
  if (rc != 0)
    return failed("a rule", rc);

  // no_new_privs (libseccomp's default) lets an unprivileged process load the filter.
  if (int r = seccomp_load(ctx); r != 0)
    return failed("load", r);
  return {};
}

void clear_environment() {
  ::clearenv();
}

} // namespace ingestd::sandbox
