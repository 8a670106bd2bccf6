package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

// TasksExtension is the identifier of the MCP tasks extension: a client
// declares it in a request's capabilities
// (_meta["io.modelcontextprotocol/clientCapabilities"].extensions) to be
// answered, for a long tools/call, with a task it then polls (tasks/get)
// or cancels (tasks/cancel) instead of waiting for the result.
const TasksExtension = "io.modelcontextprotocol/tasks"

// codeMissingCapability is MissingRequiredClientCapabilityError (MCP
// 2026-07-28): the request needs a capability the client did not declare
// on it.
const codeMissingCapability = -32021

// Task statuses.
const (
	taskWorking   = "working"
	taskCompleted = "completed"
	taskFailed    = "failed"
	taskCancelled = "cancelled"
)

// Defaults of TaskOptions.
const (
	DefaultTaskMaxPerOwner    = 16
	DefaultTaskMaxTotal       = 256
	DefaultTaskMaxRuntime     = time.Hour
	DefaultTaskTTL            = 10 * time.Minute
	DefaultTaskOutputBytes    = 8 << 10
	DefaultTaskResultBytes    = 64 << 20
	DefaultTaskAfter          = 500 * time.Millisecond
	DefaultTaskPollInterval   = 500 * time.Millisecond
	taskIDBytes               = 16 // 128 bits from crypto/rand
	taskCancelledByClientText = "Cancelled by the client (tasks/cancel)"
)

// TaskOptions bounds a TaskStore. The zero value is the defaults.
type TaskOptions struct {
	// MaxPerOwner bounds the tasks kept for one owner, running or
	// finished; 0 means DefaultTaskMaxPerOwner. When it is reached the
	// owner's oldest finished task is dropped to make room; when all of
	// them are still running a new call is refused with an error result.
	MaxPerOwner int
	// MaxTotal is the same bound over all owners; 0 means
	// DefaultTaskMaxTotal.
	MaxTotal int
	// MaxRuntime is how long a task may run: then its context is
	// cancelled (exec kills the command's process group) and it completes
	// with what the tool returned; 0 means DefaultTaskMaxRuntime.
	MaxRuntime time.Duration
	// TTL is how long a finished task is kept for tasks/get; 0 means
	// DefaultTaskTTL. A task's ttlMs counts from its creation, so it is
	// MaxRuntime+TTL while it runs and its run time plus TTL once done.
	TTL time.Duration
	// OutputBytes is how much of a task's output so far (the last of it)
	// tasks/get shows in statusMessage while it runs; 0 means
	// DefaultTaskOutputBytes.
	OutputBytes int
	// ResultBytes bounds the encoded results kept, all owners together;
	// 0 means DefaultTaskResultBytes. Over it, the oldest finished tasks
	// are dropped.
	ResultBytes int64
	// After is how long a call runs before it is answered with a task: a
	// call that finishes sooner gets its result directly, as if the client
	// had not declared the extension. 0 means DefaultTaskAfter; a negative
	// value makes every eligible call a task at once.
	After time.Duration
	// PollInterval is the pollIntervalMs suggested to clients; 0 means
	// DefaultTaskPollInterval.
	PollInterval time.Duration
}

func (o TaskOptions) withDefaults() TaskOptions {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxPerOwner, DefaultTaskMaxPerOwner)
	def(&o.MaxTotal, DefaultTaskMaxTotal)
	def(&o.OutputBytes, DefaultTaskOutputBytes)
	defDur(&o.MaxRuntime, DefaultTaskMaxRuntime)
	defDur(&o.TTL, DefaultTaskTTL)
	defDur(&o.PollInterval, DefaultTaskPollInterval)
	if o.ResultBytes <= 0 {
		o.ResultBytes = DefaultTaskResultBytes
	}
	if o.After == 0 {
		o.After = DefaultTaskAfter
	}
	return o
}

// TaskStore keeps the tasks of the tasks extension (TasksExtension) in
// memory: the calls a Server answered with a task, running or finished,
// each under its owner (ServerOptions.TaskOwner), so that one store serves
// the many Servers of a daemon (one per HTTP request) and a task outlives
// the request that started it. It does not outlive the process: Close
// stops every task still running.
//
// A task's id is 128 random bits; tasks/get, tasks/update and tasks/cancel
// find a task only under the owner that started it, and answer any other
// id as unknown. The store is bounded in tasks per owner and in all
// (TaskOptions), in run time, and in the bytes of the results it keeps.
//
// A TaskStore is safe for concurrent use.
type TaskStore struct {
	opts TaskOptions
	now  func() time.Time // tests move the clock

	mu          sync.Mutex
	tasks       map[string]*task
	perOwner    map[string]int
	resultBytes int64
	closed      bool
	wg          sync.WaitGroup

	// listenStop is closed by EndSubscriptions: the listens waiting on
	// tasks of this store end.
	listenStop chan struct{}
	stopOnce   sync.Once
}

// NewTaskStore returns an empty store bounded by opts.
func NewTaskStore(opts TaskOptions) *TaskStore {
	return &TaskStore{opts: opts.withDefaults(), now: time.Now,
		tasks: make(map[string]*task), perOwner: make(map[string]int), listenStop: make(chan struct{})}
}

// EndSubscriptions ends every subscriptions/listen stream delivering the
// notifications of this store's tasks, each with its graceful result, and
// makes later ones end right after their first notifications. A server
// shutting down calls it before it waits for its connections (Close calls
// it too).
func (st *TaskStore) EndSubscriptions() {
	st.stopOnce.Do(func() { close(st.listenStop) })
}

// Close ends the subscriptions (EndSubscriptions), cancels every running
// task (they end failed), waits for them to return, and refuses new ones.
func (st *TaskStore) Close() error {
	st.EndSubscriptions()
	st.mu.Lock()
	st.closed = true
	var running []*task
	for _, t := range st.tasks {
		running = append(running, t)
	}
	st.mu.Unlock()
	for _, t := range running {
		t.cancel(errStoreClosed)
	}
	st.wg.Wait()
	return nil
}

var (
	errTaskCancelled = errors.New("mcp: task cancelled by the client")
	errTaskRuntime   = errors.New("mcp: task ran out of time")
	errStoreClosed   = errors.New("mcp: the server shut down")
	errRequestGone   = errors.New("mcp: the request ended before its task was announced")
)

// task is one task. Its fields after the first group are guarded by mu.
type task struct {
	st      *TaskStore
	id      string
	owner   string
	created time.Time
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed once the run has returned and status is final

	mu         sync.Mutex
	status     string
	message    string // statusMessage of a terminal task
	updated    time.Time
	finished   time.Time
	result     []byte // the encoded tools/call result, when completed
	errObj     []byte // the encoded JSON-RPC error, when failed
	revealed   bool   // its id was sent to the client
	out        tailBuffer
	outTotal   int64
	cancelling bool
}

// errTooManyTasks refuses a call when the owner's tasks (or all of them)
// are all still running.
type errTooManyTasks struct{ limit int }

func (e errTooManyTasks) Error() string {
	return "Too many running tasks: at most " + strconv.Itoa(e.limit) +
		" may run at once; wait for one to finish or cancel one with tasks/cancel"
}

// start registers a task for owner and runs run in a goroutine of its own
// with a context that does not end with parent (only values are kept):
// tasks/cancel, MaxRuntime or Close end it. run's output writer keeps the
// last OutputBytes bytes for tasks/get; its return value is the encoded
// result. done is called once the task has finished.
func (st *TaskStore) start(parent context.Context, owner string, run func(ctx context.Context, out io.Writer) []byte, done func()) (*task, error) {
	id, err := newTaskID()
	if err != nil {
		return nil, err
	}
	now := st.now()
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return nil, errStoreClosed
	}
	st.sweepLocked(now)
	if st.perOwner[owner] >= st.opts.MaxPerOwner && !st.evictLocked(&owner) {
		st.mu.Unlock()
		return nil, errTooManyTasks{st.opts.MaxPerOwner}
	}
	if len(st.tasks) >= st.opts.MaxTotal && !st.evictLocked(nil) {
		st.mu.Unlock()
		return nil, errTooManyTasks{st.opts.MaxTotal}
	}
	ctx, cancelRuntime := context.WithTimeoutCause(context.WithoutCancel(parent), st.opts.MaxRuntime, errTaskRuntime)
	ctx, cancel := context.WithCancelCause(ctx)
	t := &task{st: st, id: id, owner: owner, created: now, cancel: cancel, done: make(chan struct{}),
		status: taskWorking, updated: now}
	t.out.max = st.opts.OutputBytes
	st.tasks[id] = t
	st.perOwner[owner]++
	st.wg.Add(1)
	st.mu.Unlock()
	go func() {
		defer st.wg.Done()
		defer cancelRuntime()
		res := run(ctx, (*taskOutput)(t))
		t.finish(res, context.Cause(ctx))
		cancel(nil)
		if done != nil {
			done()
		}
	}()
	return t, nil
}

// finish records the end of the run: its result, or why it was stopped.
func (t *task) finish(res []byte, cause error) {
	st := t.st
	now := st.now()
	st.mu.Lock()
	t.mu.Lock()
	t.finished, t.updated = now, now
	switch cause {
	case errTaskCancelled, errRequestGone:
		t.status, t.message = taskCancelled, taskCancelledByClientText
	case errStoreClosed:
		t.status, t.message = taskFailed, "The server shut down before the task finished"
		t.errObj = appendErrorObject(nil, CodeInternalError, t.message)
	default:
		t.status, t.result = taskCompleted, res
		if cause == errTaskRuntime {
			t.message = "Stopped after the maximum run time of " + st.opts.MaxRuntime.String()
		}
	}
	t.out = tailBuffer{}
	if _, ok := st.tasks[t.id]; ok {
		st.resultBytes += int64(len(t.result))
	}
	close(t.done)
	t.mu.Unlock()
	st.sweepLocked(now)
	st.mu.Unlock()
}

// lookup returns owner's task id, or nil when there is none (expired,
// never announced, or another owner's).
func (st *TaskStore) lookup(owner, id string) *task {
	now := st.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sweepLocked(now)
	t := st.tasks[id]
	if t == nil || t.owner != owner {
		return nil
	}
	t.mu.Lock()
	revealed := t.revealed
	t.mu.Unlock()
	if !revealed {
		return nil
	}
	return t
}

// remove drops t (a call answered without announcing its task).
func (st *TaskStore) remove(t *task) {
	st.mu.Lock()
	st.removeLocked(t)
	st.mu.Unlock()
}

func (st *TaskStore) removeLocked(t *task) {
	if st.tasks[t.id] != t {
		return
	}
	delete(st.tasks, t.id)
	if st.perOwner[t.owner]--; st.perOwner[t.owner] <= 0 {
		delete(st.perOwner, t.owner)
	}
	t.mu.Lock()
	st.resultBytes -= int64(len(t.result))
	t.mu.Unlock()
}

// sweepLocked drops the finished tasks whose TTL has passed, and the
// oldest finished ones while the kept results are over ResultBytes.
func (st *TaskStore) sweepLocked(now time.Time) {
	for _, t := range st.tasks {
		t.mu.Lock()
		expired := !t.finished.IsZero() && now.Sub(t.finished) >= st.opts.TTL
		t.mu.Unlock()
		if expired {
			st.removeLocked(t)
		}
	}
	for st.resultBytes > st.opts.ResultBytes && st.evictLocked(nil) {
	}
}

// evictLocked drops the oldest finished task of *owner (of any owner when
// owner is nil) and reports whether there was one.
func (st *TaskStore) evictLocked(owner *string) bool {
	var oldest *task
	var at time.Time
	for _, t := range st.tasks {
		if owner != nil && t.owner != *owner {
			continue
		}
		t.mu.Lock()
		f := t.finished
		t.mu.Unlock()
		if !f.IsZero() && (oldest == nil || f.Before(at)) {
			oldest, at = t, f
		}
	}
	if oldest == nil {
		return false
	}
	st.removeLocked(oldest)
	return true
}

// requestCancel asks the task to stop: its context is cancelled (exec
// kills the command's process group) and, once the run has returned, it
// is cancelled. A finished task is left as it is.
func (t *task) requestCancel() {
	t.mu.Lock()
	working := t.status == taskWorking
	if working {
		t.cancelling = true
	}
	t.mu.Unlock()
	if working {
		t.cancel(errTaskCancelled)
	}
}

// newTaskID returns 128 random bits in hex.
func newTaskID() (string, error) {
	var b [taskIDBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// taskOutput is the writer a task's run writes its output to.
type taskOutput task

func (o *taskOutput) Write(p []byte) (int, error) {
	t := (*task)(o)
	now := t.st.now()
	t.mu.Lock()
	if t.status == taskWorking {
		t.out.write(p)
		t.outTotal += int64(len(p))
		t.updated = now
	}
	t.mu.Unlock()
	return len(p), nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (b *tailBuffer) write(p []byte) {
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return
	}
	if len(b.buf)+len(p) > 2*b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-(b.max-len(p)):]...)
	}
	b.buf = append(b.buf, p...)
}

// tail returns the last max bytes as valid UTF-8 (a character cut at the
// start is dropped, invalid bytes become U+FFFD).
func (b *tailBuffer) tail() string {
	s := b.buf
	if len(s) > b.max {
		s = s[len(s)-b.max:]
	}
	for i := 0; i < utf8.UTFMax && i < len(s) && !utf8.RuneStart(s[0]); i++ {
		s = s[1:]
	}
	return strings.ToValidUTF8(string(s), "\uFFFD")
}

// taskTime formats t the way tasks carry times: ISO 8601 in UTC with
// milliseconds.
func taskTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// appendJSON appends the task object (Task, or with detailed the
// DetailedTask of tasks/get and notifications/tasks: its result or error
// once done) with the given resultType ("": none, as in a notification).
func (t *task) appendJSON(b []byte, resultType string, detailed bool) []byte {
	st := t.st
	now := st.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if resultType != "" {
		b = append(b, `{"resultType":`...)
		b = jsonraw.AppendString(b, resultType)
		b = append(b, `,"taskId":`...)
	} else {
		b = append(b, `{"taskId":`...)
	}
	b = jsonraw.AppendString(b, t.id)
	b = append(b, `,"status":`...)
	b = jsonraw.AppendString(b, t.status)
	msg := t.message
	if t.status == taskWorking {
		msg = "Running for " + now.Sub(t.created).Round(time.Second).String() + "; " +
			strconv.FormatInt(t.outTotal, 10) + " bytes of output so far"
		if t.cancelling {
			msg = "Cancelling; " + msg
		}
		if t.outTotal > 0 {
			if t.outTotal > int64(t.out.max) {
				msg += ", the last " + strconv.Itoa(t.out.max) + " of them"
			}
			msg += ":\n" + t.out.tail()
		}
	}
	if msg != "" {
		b = append(b, `,"statusMessage":`...)
		b = jsonraw.AppendString(b, msg)
	}
	b = append(b, `,"createdAt":`...)
	b = jsonraw.AppendString(b, taskTime(t.created))
	b = append(b, `,"lastUpdatedAt":`...)
	b = jsonraw.AppendString(b, taskTime(t.updated))
	ttl := st.opts.MaxRuntime + st.opts.TTL
	if !t.finished.IsZero() {
		ttl = t.finished.Sub(t.created) + st.opts.TTL
	}
	b = append(b, `,"ttlMs":`...)
	b = strconv.AppendInt(b, ttl.Milliseconds(), 10)
	b = append(b, `,"pollIntervalMs":`...)
	b = strconv.AppendInt(b, st.opts.PollInterval.Milliseconds(), 10)
	if detailed {
		switch t.status {
		case taskCompleted:
			b = append(b, `,"result":`...)
			b = append(b, t.result...)
		case taskFailed:
			b = append(b, `,"error":`...)
			b = append(b, t.errObj...)
		}
	}
	return append(b, '}')
}

// appendErrorObject appends a JSON-RPC error object {code, message}.
func appendErrorObject(b []byte, code int, msg string) []byte {
	b = append(b, `{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = jsonraw.AppendString(b, msg)
	return append(b, '}')
}
