// Connections this process holds, as the kernel lists them: how the HTTP engine's tests and
// bench/slow_io see how many connections a burst of requests opened.
#pragma once

namespace ingestd::test {

/// Established IPv4 connections of this process to loopback `port`, from /proc/net/tcp: the
/// sockets whose inode is one of this process's descriptors (other processes have connections
/// of their own to ports of any number), each counted once (a read of the table while others
/// change it can list a socket twice).
int connections_to(int port);

} // namespace ingestd::test
