package acp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// Instance is one ACP transport instance: a client-chosen server ID bound
// to one agent process, its pending requests and its replay ring.
type Instance struct {
	id      string
	part    string // its Partition's Key
	agent   string
	root    string // RootDir of the backend it runs on (its scope)
	created time.Time
	cfg     *ProxyConfig
	ring    *Ring
	stderr  *tailBuffer

	ready    chan struct{} // closed once the process started (or failed to)
	startErr error         // set before ready is closed
	proc     *process

	ctx     context.Context // the process's lifetime
	cancel  context.CancelFunc
	release func() // returns the backend obtained for this instance

	mu      sync.Mutex
	pending map[string]chan []byte
	exited  chan struct{} // closed when the agent's stdout is done and the process reaped
	exitErr error
	started time.Time

	writeMu   sync.Mutex
	closeOnce sync.Once
}

// InstanceInfo describes an instance for GET /v1/acp.
type InstanceInfo struct {
	ServerID    string `json:"serverId"`
	Agent       string `json:"agent"`
	CreatedAtMs int64  `json:"createdAtMs"`
	// Status is "starting", "running" or "exited".
	Status   string `json:"status"`
	UptimeMs int64  `json:"uptimeMs,omitempty"`
	// Error says why an exited process ended (or failed to start).
	Error string `json:"error,omitempty"`
}

// Info reports the instance's state.
func (in *Instance) Info() InstanceInfo {
	info := InstanceInfo{ServerID: in.id, Agent: in.agent, CreatedAtMs: in.created.UnixMilli(), Status: "starting"}
	select {
	case <-in.ready:
	default:
		return info
	}
	select {
	case <-in.exited:
		info.Status = "exited"
		in.mu.Lock()
		if in.exitErr != nil {
			info.Error = in.exitErr.Error()
		}
		in.mu.Unlock()
	default:
		info.Status = "running"
		info.UptimeMs = time.Since(in.started).Milliseconds()
	}
	return info
}

// start installs the agent if needed and launches it; it runs in its own
// goroutine, so the instance is listed (and its SSE stream can be opened)
// before the first message is forwarded.
//
// When the process cannot be started (install failure, launch refused by
// the backend), onFail runs after the waiting requests were answered (502):
// the proxy then forgets the instance, as sandbox-agent does, so that a
// client can retry with the same server ID.
func (in *Instance) start(a Agent, b agentbe.Backend, secret []string, onFail func()) {
	err := in.launch(a, b, secret)
	if err != nil {
		in.startErr = err
		in.mu.Lock()
		in.exitErr = err
		in.mu.Unlock()
		close(in.exited)
	}
	close(in.ready)
	if err != nil {
		onFail()
	}
}

func (in *Instance) launch(a Agent, b agentbe.Backend, secret []string) error {
	env := agentEnv(a, secret)
	if !agentInstalled(in.ctx, b, a) && a.Install != "" {
		ictx, cancel := context.WithTimeout(in.ctx, in.cfg.installTimeout())
		_, err := b.Exec(ictx, a.Install, agentbe.ExecOptions{Env: env})
		cancel()
		if err != nil {
			return fmt.Errorf("installing agent %s failed: %s", a.ID, execSummary(err))
		}
	}
	p, err := startProcess(in.ctx, b, a.Command, env, in.stderr)
	if err != nil {
		return fmt.Errorf("failed to start agent process: %v", err)
	}
	in.proc = p
	in.started = time.Now()
	go in.pump()
	return nil
}

// noCR returns a copy of the agent's line msg without a bare CR, which
// would end the SSE line it is sent on and corrupt the event: a JSON line
// is compacted (there a raw CR can only be whitespace between tokens),
// anything else has each CR replaced by a space.
func noCR(msg []byte) []byte {
	if bytes.IndexByte(msg, '\r') < 0 {
		return bytes.Clone(msg)
	}
	if c, err := oneLine(msg); err == nil {
		return c
	}
	return bytes.ReplaceAll(msg, []byte{'\r'}, []byte{' '})
}

// pump reads the agent's stdout line by line: every line goes to the
// replay ring (and so to SSE readers); a response also goes to the POST
// waiting for its id.
func (in *Instance) pump() {
	r := bufio.NewReaderSize(in.proc.stdout, 64<<10)
	max := in.cfg.maxMessageBytes()
	var line []byte
	var readErr error
	over := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !over {
			if len(line)+len(chunk) > max {
				over, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if over {
			in.cfg.logger().Warn("acp: agent message over the size limit dropped", "server_id", in.id, "limit", max)
			over = false
		} else if msg := bytes.TrimSpace(line); len(msg) > 0 {
			in.deliver(noCR(msg))
		}
		line = line[:0]
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
	}
	in.proc.stdout.Close()
	<-in.proc.done
	in.mu.Lock()
	switch {
	case in.ctx.Err() != nil:
		in.exitErr = errors.New("agent process stopped")
	case in.proc.err != nil:
		in.exitErr = fmt.Errorf("agent process exited: %s", execSummary(in.proc.err))
	case readErr != nil:
		in.exitErr = fmt.Errorf("reading agent output: %v", readErr)
	default:
		in.exitErr = errors.New("agent process exited")
	}
	in.pending = map[string]chan []byte{} // waiters see exited
	in.mu.Unlock()
	close(in.exited)
	in.cfg.logger().Debug("acp: agent process ended", "server_id", in.id, "stderr", in.stderr.String())
}

func (in *Instance) deliver(msg []byte) {
	in.ring.Append(msg)
	e, err := parseEnvelope(msg)
	if err != nil || !e.isResponse() {
		return
	}
	key := idKey(e.ID)
	in.mu.Lock()
	ch := in.pending[key]
	delete(in.pending, key)
	in.mu.Unlock()
	if ch != nil {
		ch <- msg // buffered, never blocks
	}
}

// Send forwards one JSON-RPC message. For a request it waits for the
// agent's response and returns it (the response is also replayed on SSE,
// as sandbox-agent does); for anything else it returns (nil, nil) once the
// message is written. Errors are *problemError: 502 when the process
// cannot be started, written to or has exited; 504 when the response does
// not come within ProxyConfig.RequestTimeout; 409 when a request with the
// same id is already pending.
func (in *Instance) Send(ctx context.Context, msg []byte) ([]byte, error) {
	e, err := parseEnvelope(msg)
	if err != nil {
		return nil, badRequest("invalid JSON body: " + err.Error())
	}
	return in.send(ctx, msg, e)
}

// send is Send with msg already parsed into e.
func (in *Instance) send(ctx context.Context, msg []byte, e envelope) ([]byte, error) {
	line, err := oneLine(msg)
	if err != nil {
		return nil, badRequest("invalid JSON body: " + err.Error())
	}
	// Starting may include the lazy install: bounded by InstallTimeout, not
	// by the request timeout, which starts once the process is up.
	startWait := time.NewTimer(in.cfg.installTimeout())
	select {
	case <-in.ready:
		startWait.Stop()
	case <-ctx.Done():
		startWait.Stop()
		return nil, ctx.Err()
	case <-startWait.C:
		return nil, problem(http.StatusGatewayTimeout, "timeout", "Timeout", "timeout: agent process did not start in time")
	}
	timeout := time.NewTimer(in.cfg.requestTimeout())
	defer timeout.Stop()
	if in.startErr != nil {
		return nil, streamError(http.StatusBadGateway, in.startErr.Error())
	}
	var ch chan []byte
	var key string
	if e.isRequest() {
		key = idKey(e.ID)
		if key == "" {
			return nil, badRequest("JSON-RPC id must be a string or a number")
		}
		ch = make(chan []byte, 1)
		in.mu.Lock()
		if in.isExited() {
			in.mu.Unlock()
			return nil, in.exitProblem()
		}
		if _, dup := in.pending[key]; dup {
			in.mu.Unlock()
			return nil, conflict("a request with this id is already pending")
		}
		in.pending[key] = ch
		in.mu.Unlock()
		defer in.forget(key, ch)
	}
	if err := in.write(line); err != nil {
		if in.isExited() {
			return nil, in.exitProblem()
		}
		return nil, streamError(http.StatusBadGateway, "writing to agent process failed")
	}
	if ch == nil {
		return nil, nil
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-in.exited:
		select { // a response read just before the exit still counts
		case resp := <-ch:
			return resp, nil
		default:
		}
		return nil, in.exitProblem()
	case <-timeout.C:
		return nil, problem(http.StatusGatewayTimeout, "timeout", "Timeout",
			"timeout: no response from the agent within "+in.cfg.requestTimeout().String())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (in *Instance) forget(key string, ch chan []byte) {
	in.mu.Lock()
	if in.pending[key] == ch {
		delete(in.pending, key)
	}
	in.mu.Unlock()
}

// write sends one line; a full pipe (an agent that stopped reading) fails
// once the request's deadline passes instead of blocking forever.
func (in *Instance) write(line []byte) error {
	in.writeMu.Lock()
	defer in.writeMu.Unlock()
	f := in.proc.stdin
	_ = f.SetWriteDeadline(time.Now().Add(in.cfg.requestTimeout()))
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	_, err := f.Write(buf)
	return err
}

func (in *Instance) isExited() bool {
	select {
	case <-in.exited:
		return true
	default:
		return false
	}
}

func (in *Instance) exitProblem() *problemError {
	in.mu.Lock()
	err := in.exitErr
	in.mu.Unlock()
	if err == nil {
		err = errors.New("agent process exited")
	}
	return streamError(http.StatusBadGateway, err.Error())
}

// close stops the process (killing its process group through the Exec
// context), ends SSE streams and returns the backend. It waits at most
// wait for the process to be reaped.
func (in *Instance) close(wait time.Duration) {
	in.closeOnce.Do(func() {
		in.cancel()
		in.ring.Close()
		t := time.NewTimer(wait)
		defer t.Stop()
		started := false
		select {
		case <-in.ready:
			started = true // in.proc is safe to read once ready is closed
		case <-t.C:
		}
		if started && in.proc != nil {
			in.writeMu.Lock()
			in.proc.stdin.Close()
			in.writeMu.Unlock()
			select {
			case <-in.exited:
			case <-t.C:
			}
		}
		if in.release != nil {
			in.release()
		}
	})
}

// agentEnv is the environment the agent gets over the backend's clean base:
// its declared host variables that are set (never a SecretEnv name) and its
// fixed Env.
func agentEnv(a Agent, secret []string) map[string]string {
	env := map[string]string{}
	for _, k := range a.HostEnv {
		if v, ok := os.LookupEnv(k); ok && !slices.Contains(secret, k) {
			env[k] = v
		}
	}
	for k, v := range a.Env {
		env[k] = v
	}
	return env
}

// agentInstalled reports whether a's Check path exists in b.
func agentInstalled(ctx context.Context, b agentbe.Backend, a Agent) bool {
	if a.Check == "" {
		return a.Install == ""
	}
	ok, err := b.Exists(ctx, a.Check)
	return err == nil && ok
}

// execSummary describes an Exec failure without its output.
func execSummary(err error) string {
	var xe *agentbe.ExitError
	if errors.As(err, &xe) {
		return fmt.Sprintf("exit code %d", xe.ExitCode)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "stopped"
	}
	var be *agentbe.Error
	if errors.As(err, &be) {
		if be.Reason != "" {
			return string(be.Code) + ": " + be.Reason
		}
		return string(be.Code)
	}
	return "failed"
}
