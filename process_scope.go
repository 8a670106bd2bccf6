package agentbe

import "context"

// runner returns the scope's process runner, or an error where the backend
// it wraps runs none.
func (s *Scope) runner(op string) (ProcessRunner, error) {
	if err := s.alive(op, ""); err != nil {
		return nil, err
	}
	if r, ok := s.inner.(ProcessRunner); ok && Executes(s) {
		return r, nil
	}
	return nil, &Error{Code: CodeNotImplemented, Op: op, Backend: s.Kind(), Err: ErrNotImplemented}
}

// StartProcess starts command in the scope directory (see
// Local.StartProcess); the scope's environment chain is merged under
// opts.Env. The process belongs to the scope's directory: only scopes of
// that directory see it, and it outlives this Scope value (until it exits
// or the root backend is destroyed).
func (s *Scope) StartProcess(ctx context.Context, command string, opts ProcessOptions) (*Process, error) {
	r, err := s.runner("process")
	if err != nil {
		return nil, err
	}
	if err := s.ensureRoot(ctx); err != nil {
		return nil, err
	}
	opts.Env = mergeMaps(s.env, opts.Env)
	return r.StartProcess(ctx, command, opts)
}

// Process returns the scope's process of that id.
func (s *Scope) Process(ctx context.Context, id string) (*Process, error) {
	r, err := s.runner("process")
	if err != nil {
		return nil, err
	}
	return r.Process(ctx, id)
}

// Processes lists the scope's processes.
func (s *Scope) Processes(ctx context.Context) ([]ProcessInfo, error) {
	r, err := s.runner("process")
	if err != nil {
		return nil, err
	}
	return r.Processes(ctx)
}

// RemoveProcess forgets an exited process of the scope.
func (s *Scope) RemoveProcess(ctx context.Context, id string) error {
	r, err := s.runner("process")
	if err != nil {
		return err
	}
	return r.RemoveProcess(ctx, id)
}

var _ ProcessRunner = (*Scope)(nil)
