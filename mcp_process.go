package agentbe

import (
	"context"
	"errors"
	"time"

	"github.com/agentbe/agent-backend/internal/fstools"
)

// mcpProcesses serves the MCP process tools (MCPServerOptions.Processes)
// from a backend's ProcessRunner.
type mcpProcesses struct{ r ProcessRunner }

func (m mcpProcesses) state(ctx context.Context, p *Process) (fstools.ProcessState, error) {
	in, err := p.Info(ctx)
	if err != nil {
		return fstools.ProcessState{}, err
	}
	return toolState(in), nil
}

func toolState(in ProcessInfo) fstools.ProcessState {
	st := fstools.ProcessState{ID: in.ID, Command: in.Command, Status: "running", PID: in.PID}
	if !in.Running {
		st.Status = "exited"
		if in.ExitCode >= 0 {
			code := in.ExitCode
			st.ExitCode = &code
		}
	}
	return st
}

func (m mcpProcesses) StartProcess(ctx context.Context, command string, o fstools.ProcessStart) (fstools.ProcessState, error) {
	p, err := m.r.StartProcess(ctx, command, ProcessOptions{Dir: o.Dir, Env: o.Env, TTY: o.TTY})
	if err != nil {
		return fstools.ProcessState{}, err
	}
	return m.state(ctx, p)
}

func (m mcpProcesses) ReadProcess(ctx context.Context, id string, since uint64, wait time.Duration) (fstools.ProcessRead, error) {
	p, err := m.r.Process(ctx, id)
	if err != nil {
		return fstools.ProcessRead{}, err
	}
	es, err := p.Output(ctx, since)
	if err == nil && len(es) == 0 && wait > 0 {
		// Wait for the first new entry (or the end of the output).
		wctx, cancel := context.WithTimeout(ctx, wait)
		first := errors.New("first")
		ferr := p.Follow(wctx, since, func(e OutputEntry) error {
			es = append(es, e)
			return first
		})
		cancel()
		if ferr != nil && ferr != first && !errors.Is(ferr, context.DeadlineExceeded) {
			return fstools.ProcessRead{}, ferr
		}
		if len(es) > 0 {
			es, err = p.Output(ctx, since) // everything there is by now
		}
	}
	if err != nil {
		return fstools.ProcessRead{}, err
	}
	st, err := m.state(ctx, p)
	if err != nil {
		return fstools.ProcessRead{}, err
	}
	r := fstools.ProcessRead{State: st}
	for _, e := range es {
		r.Dropped += e.Dropped
		r.Entries = append(r.Entries, fstools.ProcessEntry{Seq: e.Seq, Stream: string(e.Stream), Data: e.Data})
	}
	return r, nil
}

func (m mcpProcesses) WriteProcess(ctx context.Context, id string, data []byte) (int, error) {
	p, err := m.r.Process(ctx, id)
	if err != nil {
		return 0, err
	}
	return p.WriteContext(ctx, data)
}

func (m mcpProcesses) StopProcess(ctx context.Context, id string, kill bool, wait time.Duration) (fstools.ProcessState, error) {
	p, err := m.r.Process(ctx, id)
	if err != nil {
		return fstools.ProcessState{}, err
	}
	sig := SIGTERM
	if kill {
		sig = SIGKILL
	}
	if err := p.Signal(ctx, sig); err != nil {
		return fstools.ProcessState{}, err
	}
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		_, _ = p.Wait(wctx)
		cancel()
	}
	return m.state(ctx, p)
}

func (m mcpProcesses) ListProcesses(ctx context.Context) ([]fstools.ProcessState, error) {
	ps, err := m.r.Processes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]fstools.ProcessState, 0, len(ps))
	for _, in := range ps {
		out = append(out, toolState(in))
	}
	return out, nil
}
