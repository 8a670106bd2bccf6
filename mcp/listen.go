package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

// subscriptions/listen (modern era) opens a stream of notifications the
// client filters by type. A Server's tool list never changes and it has no
// prompts or resources, so it declares no listChanged and honours none of
// the list or resource types; what it does deliver, with a TaskStore, is
// notifications/tasks for the tasks the filter names (taskIds) among the
// caller's own, as the tasks extension defines. The acknowledgement lists
// what is honoured; a listen honouring nothing ends at once with the
// graceful result, as the official Go SDK's server does; one honouring
// tasks gets each task's state at once and again when it ends, and ends
// gracefully when all of them have ended (or the transport closes, or the
// store ends its subscriptions). docs/mcp.md says more.

// MetaSubscriptionID is the params._meta key tagging every message of a
// subscriptions/listen stream with the listen request's id.
const MetaSubscriptionID = "io.modelcontextprotocol/subscriptionId"

// listenClosingKey carries, in a listen request's context, a channel the
// transport closes when it stops reading (stdio at EOF): the listen then
// ends gracefully instead of holding the transport's shutdown.
type listenClosingKey struct{}

func withListenClosing(ctx context.Context, ch <-chan struct{}) context.Context {
	return context.WithValue(ctx, listenClosingKey{}, ch)
}

func listenClosing(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(listenClosingKey{}).(<-chan struct{})
	return ch
}

// listen serves subscriptions/listen.
func (s *Server) listen(ctx context.Context, rq *request) []byte {
	if !rq.modern() {
		return s.methodNotFound(rq)
	}
	m := rq.Message
	var filter []byte
	if paramsObject(m) {
		jsonraw.ScanObject(m.Params, func(k, v []byte) {
			if string(k) == "notifications" {
				filter = v
			}
		})
	}
	if len(filter) == 0 || filter[0] != '{' {
		return appendError(nil, m.ID, CodeInvalidParams, "Invalid params: notifications must be an object", nil)
	}
	var ids []byte
	jsonraw.ScanObject(filter, func(k, v []byte) {
		if string(k) == "taskIds" {
			ids = v
		}
	})
	var taskIDs []string
	if ids != nil {
		if err := json.Unmarshal(ids, &taskIDs); err != nil || ids[0] != '[' {
			return appendError(nil, m.ID, CodeInvalidParams, "Invalid params: notifications.taskIds must be an array of strings", nil)
		}
	}
	st := s.opts.Tasks
	if st != nil && len(taskIDs) > st.opts.MaxTotal {
		// No caller has more tasks than that; each id costs a lookup.
		return appendError(nil, m.ID, CodeInvalidParams, "Invalid params: notifications.taskIds names more than "+
			strconv.Itoa(st.opts.MaxTotal)+" tasks, the most this server keeps", nil)
	}
	var tasks []*task
	if st != nil && len(taskIDs) > 0 {
		if !rq.info.HasExtension(TasksExtension) {
			rq.status = http.StatusBadRequest
			return appendError(nil, m.ID, codeMissingCapability,
				"Missing required client capability: task notifications need the "+TasksExtension+
					" extension declared in this request's _meta clientCapabilities", missingTasksCapability)
		}
		seen := make(map[string]bool, len(taskIDs))
		for _, id := range taskIDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			// Another owner's task, like an unknown one, is not honoured.
			if t := st.lookup(s.opts.TaskOwner, id); t != nil {
				tasks = append(tasks, t)
			}
		}
	}
	send := notifierOf(ctx)
	if send == nil {
		return appendError(nil, m.ID, CodeInvalidRequest, "Invalid Request: subscriptions/listen needs a stream for its notifications "+
			"(send it alone, not in a batch; over HTTP accept text/event-stream)", nil)
	}
	send.notify(s.listenAck(m.ID, tasks))
	pending := make([]*task, 0, len(tasks))
	for _, t := range tasks {
		if !s.notifyTask(send, m.ID, t) {
			pending = append(pending, t)
		}
	}
	var stop <-chan struct{}
	if st != nil {
		stop = st.listenStop
	}
	closing := listenClosing(ctx)
	// One goroutine per running task hands it over when it ends; all of
	// them return when the listen does.
	ended := make(chan *task, len(pending))
	quit := make(chan struct{})
	defer close(quit)
	for _, t := range pending {
		go func() {
			select {
			case <-t.done:
				ended <- t
			case <-quit:
			}
		}()
	}
	for n := len(pending); n > 0; n-- {
		select {
		case t := <-ended:
			s.notifyTask(send, m.ID, t)
		case <-ctx.Done():
			return nil // cancelled: nothing more may be sent for it
		case <-stop:
			n = 1
		case <-closing:
			n = 1
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return s.listenEnd(m.ID)
}

// listenAck is notifications/subscriptions/acknowledged naming what the
// listen honours: the tasks found, nothing else.
func (s *Server) listenAck(id json.RawMessage, tasks []*task) []byte {
	b := append(make([]byte, 0, 160+len(id)+len(tasks)*36), `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{`...)
	if len(tasks) > 0 {
		b = append(b, `"taskIds":[`...)
		for i, t := range tasks {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonraw.AppendString(b, t.id)
		}
		b = append(b, ']')
	}
	b = append(b, `},"_meta":{"`+MetaSubscriptionID+`":`...)
	b = append(b, id...)
	return append(b, "}}}"...)
}

// notifyTask sends notifications/tasks with t's current state (what
// tasks/get would answer) and reports whether t has ended. A state too
// large for one message goes without its result, which tasks/get then
// gives.
func (s *Server) notifyTask(send notifier, id json.RawMessage, t *task) bool {
	done := false
	select {
	case <-t.done:
		done = true
	default:
	}
	head := func() []byte {
		return append(make([]byte, 0, 1024+len(id)), `{"jsonrpc":"2.0","method":"notifications/tasks","params":`...)
	}
	tail := func(b []byte) []byte {
		b = append(b[:len(b)-1], `,"_meta":{"`+MetaSubscriptionID+`":`...) // inside the task object
		b = append(b, id...)
		return append(b, "}}}"...)
	}
	b := tail(t.appendJSON(head(), "", true))
	if len(b) > s.opts.MessageLimit() {
		b = tail(t.appendJSON(head(), "", false))
	}
	send.notify(b)
	return done
}

// listenEnd is the graceful end of a listen: a complete result tagged
// with the subscription.
func (s *Server) listenEnd(id json.RawMessage) []byte {
	b := append(make([]byte, 0, 192+2*len(id)), `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":{"resultType":"complete","_meta":{"`+MetaSubscriptionID+`":`...)
	b = append(b, id...)
	b = s.appendServerInfo(append(b, ','))
	return append(b, "}}}"...)
}
