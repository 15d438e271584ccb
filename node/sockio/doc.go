// Package sockio reads and writes a stream socket for a message protocol
// whose messages carry bulk data: a Reader takes small headers through a
// read-ahead buffer and bulk data straight into the caller's buffer, a
// Writer writes a message's parts with one writev. Both the server's
// connections and the load generator's client use it, so it imports
// nothing of the project.
//
// Over TCP the system calls are RawSyscalls on the non-blocking socket,
// made through its syscall.RawConn: EAGAIN waits in the network poller,
// and none of the calls can block, so the runtime's entersyscall
// bookkeeping buys nothing — and it costs: after every idle spell the
// first entersyscall wakes the runtime's sysmon thread, which then polls
// every 20 µs for a millisecond. A process answering or making pipelined
// requests goes idle and wakes thousands of times a second; sysmon's
// sleeps and wake-ups were 10–12 % of the server's CPU (perf, 64 KiB
// READs). Other connections (net.Pipe in tests) use Read and Write.
//
// Invariant: it imports nothing of the project, and over TCP none of its
// system calls blocks the thread: a socket that is not ready waits in the
// network poller.
package sockio
