package multicast

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/artest/artest/internal/comm"
)

// FDRequest names one descriptor to fetch: the one rank Rank offers as Name.
type FDRequest struct {
	Rank int
	Name string
}

// FDExchange moves file descriptors between the ranks of one node. Every
// rank offers descriptors under names and asks for some of the others'.
// It is collective, and it fails on every rank when it fails on one. The
// descriptors it returns are new ones that the caller owns, also when it
// returns an error.
type FDExchange interface {
	Exchange(c Comm, offer map[string]int, want []FDRequest) (map[FDRequest]int, error)
}

// SocketExchange passes descriptors over Unix domain sockets (SCM_RIGHTS).
//
// Each rank listens on an abstract socket, "@artest-fd-<job>-<rank>" (no
// file in the file system; the job id is random and broadcast by rank 0),
// serves its descriptors to whoever connects, and fetches what it wants
// from the others. A connecting process must be one of the job's ranks
// (its pid, checked with SO_PEERCRED) and run as the same user: abstract
// sockets are visible to every process of the network namespace, and a
// descriptor gives access to GPU memory. So the ranks must share a network
// namespace (one container, or none).
type SocketExchange struct {
	// Timeout bounds each connection; 0 means 60 s.
	Timeout time.Duration
}

// Exchange implements FDExchange.
func (x SocketExchange) Exchange(c Comm, offer map[string]int, want []FDRequest) (map[FDRequest]int, error) {
	timeout := x.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	job := make([]byte, 8)
	if c.Rank() == 0 {
		rand.Read(job) // never fails (crypto/rand crashes the program instead)
	}
	if err := c.Bcast(job, 0); err != nil {
		return nil, fmt.Errorf("broadcast job id: %w", err)
	}
	name := func(r int) string { return fmt.Sprintf("@artest-fd-%s-%d", hex.EncodeToString(job), r) }

	// Listen, then tell everyone our pid, and whether every rank listens.
	ln, lerr := net.ListenUnix("unix", &net.UnixAddr{Name: name(c.Rank()), Net: "unix"})
	pid := make([]byte, 8)
	binary.LittleEndian.PutUint64(pid, uint64(os.Getpid()))
	all, err := c.Allgather(pid)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, fmt.Errorf("exchange pids: %w", err)
	}
	if lerr != nil {
		lerr = fmt.Errorf("cannot listen: %w", lerr)
	}
	if err := comm.Agree(c, lerr); err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, err
	}
	pids := map[int]bool{}
	for r := 0; r < c.Size(); r++ {
		pids[int(binary.LittleEndian.Uint64(all[r*8:]))] = true
	}

	srv := &fdServer{ln: ln, offer: offer, pids: pids, uid: os.Getuid(), timeout: timeout}
	srv.wg.Add(1)
	go srv.serve()

	got := map[FDRequest]int{}
	var fetchErr error
	for _, req := range want {
		fd, err := fetchFD(name(req.Rank), req.Name, timeout)
		if err != nil {
			fetchErr = fmt.Errorf("fetch %s from rank %d: %w", req.Name, req.Rank, err)
			break
		}
		got[req] = fd
	}
	// Nobody stops serving while a peer may still be fetching.
	agreeErr := comm.Agree(c, fetchErr)
	ln.Close()
	srv.wg.Wait()
	if agreeErr != nil {
		return got, fmt.Errorf("fetch descriptors: %w", agreeErr)
	}
	return got, nil
}

// refusal starts the server's reply when it sends no descriptor.
const refusal = "refused: "

// fdServer hands out descriptors on one listening socket until it closes.
type fdServer struct {
	ln      *net.UnixListener
	offer   map[string]int
	pids    map[int]bool
	uid     int
	timeout time.Duration
	wg      sync.WaitGroup
}

func (s *fdServer) serve() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			return // closed
		}
		s.handle(conn)
	}
}

func (s *fdServer) handle(conn *net.UnixConn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(s.timeout))
	cred, err := peerCred(conn)
	if err != nil {
		return
	}
	if reason := s.refuse(cred); reason != "" {
		_, _ = conn.Write([]byte(refusal + reason))
		return
	}
	buf := make([]byte, 256)
	n, err := conn.Read(buf)
	if err != nil {
		return
	}
	fd, ok := s.offer[strings.TrimSpace(string(buf[:n]))]
	if !ok || fd < 0 {
		_, _ = conn.Write([]byte(refusal + "no such descriptor"))
		return
	}
	_, _, _ = conn.WriteMsgUnix([]byte("ok"), syscall.UnixRights(fd), nil)
}

// refuse says why a connecting process may not have a descriptor ("" if it
// may): it must be one of the job's ranks and run as our user.
func (s *fdServer) refuse(cred *syscall.Ucred) string {
	if int(cred.Uid) != s.uid {
		return fmt.Sprintf("uid %d is not %d", cred.Uid, s.uid)
	}
	if !s.pids[int(cred.Pid)] {
		return fmt.Sprintf("pid %d is not a rank of this job", cred.Pid)
	}
	return ""
}

func peerCred(conn *net.UnixConn) (*syscall.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, cerr
}

// fetchFD asks the socket at addr for the descriptor called name.
func fetchFD(addr, name string, timeout time.Duration) (int, error) {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		return -1, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte(name + "\n")); err != nil {
		return -1, err
	}
	buf := make([]byte, 256)
	oob := make([]byte, syscall.CmsgSpace(4))
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return -1, err
	}
	msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn])
	var fds []int
	if perr == nil {
		for i := range msgs {
			if f, err := syscall.ParseUnixRights(&msgs[i]); err == nil {
				fds = append(fds, f...)
			}
		}
	}
	if string(buf[:n]) != "ok" || len(fds) != 1 {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		if reply := string(buf[:n]); reply != "ok" {
			return -1, errors.New(strings.TrimPrefix(reply, refusal))
		}
		return -1, fmt.Errorf("got %d descriptors, want 1", len(fds))
	}
	return fds[0], nil
}
