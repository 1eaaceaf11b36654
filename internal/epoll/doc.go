// Package epoll waits on sockets with Linux's epoll(7), to the nanosecond
// where the kernel has epoll_pwait2 (Linux 5.11): the loops that pace
// sends themselves (the flood's dispatcher reading its answers, the
// bench's open-loop reference) sleep in it until their next send is due,
// and a wait rounded up to a millisecond would make that send late.
// Elsewhere it has nothing; its callers are Linux files.
package epoll
