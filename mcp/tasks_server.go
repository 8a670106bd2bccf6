package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/agentbe/agent-backend/internal/jsonraw"
)

// The Server's side of the tasks extension (TasksExtension): which calls
// become tasks, and tasks/get, tasks/update and tasks/cancel.

// requestDeclaresTasks reports whether the request declares the tasks
// extension in its own capabilities,
// params._meta["io.modelcontextprotocol/clientCapabilities"].extensions:
// a server must not answer with a task, nor serve the tasks methods, to a
// request that does not, whatever earlier requests declared.
//
// This is the one place the protocol era meets the tasks engine: the
// extension belongs to the 2026-07-28 revision, whose requests all carry
// their capabilities in _meta; where the era is known it should also be
// required to be that one.
func requestDeclaresTasks(m *Message) bool {
	f := metaOf(m)
	if f.caps == nil {
		return false
	}
	if t := f.tasks.Load(); t != 0 {
		return t == 2
	}
	found := int32(1)
	jsonraw.ScanObject(f.caps, func(k, v []byte) {
		if string(k) != "extensions" {
			return
		}
		jsonraw.ScanObject(v, func(k, v []byte) {
			if string(k) == TasksExtension && len(v) > 0 && v[0] == '{' {
				found = 2
			}
		})
	})
	f.tasks.Store(found)
	return found == 2
}

// missingTasksCapability is the -32021 data naming the extension.
var missingTasksCapability = json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + TasksExtension + `":{}}}}`)

// taskEligible reports whether the call m of tool i may become a task.
func (s *Server) taskEligible(i int, m *Message) bool {
	return s.opts.Tasks != nil && s.set.tools[i].LongRunning && requestDeclaresTasks(m)
}

// callAsTask runs the call m of tool i as a task: it answers with the
// result when the call finishes within TaskOptions.After, and with the
// task (CreateTaskResult) otherwise. The task runs on, bound to neither
// this request nor its transport, until it finishes, is cancelled
// (tasks/cancel) or runs out of time (TaskOptions.MaxRuntime).
func (s *Server) callAsTask(ctx context.Context, m *Message, i int, name []byte, args json.RawMessage) []byte {
	st := s.opts.Tasks
	name = bytes.Clone(name) // the run outlives the request
	s.mu.Lock()
	s.tasksRunning++
	s.mu.Unlock()
	// The task's result must leave room, in tasks/get's answer, for the
	// task's fields around it.
	const taskFieldsReserve = 1 << 10
	t, err := st.start(withoutNotifier(ctx), s.opts.TaskOwner, func(tctx context.Context, out io.Writer) []byte {
		return s.appendToolResponse(nil, name, s.runTool(tctx, nil, i, args, callExtras{output: out, task: true}), taskFieldsReserve)
	}, s.taskDone)
	if err != nil {
		s.taskDone()
		var many errTooManyTasks
		if !errors.As(err, &many) {
			err = errors.New("Internal error: cannot start a task: " + err.Error())
		}
		return s.appendToolResponse(m.ID, name, ErrorResult(err.Error()), 0)
	}
	after := st.opts.After
	var timer <-chan time.Time
	if after > 0 {
		tm := time.NewTimer(after)
		defer tm.Stop()
		timer = tm.C
	}
	if timer != nil {
		select {
		case <-t.done:
			return s.directResult(m.ID, t)
		case <-ctx.Done():
			// The client left (or cancelled the call) before it could learn
			// the task's id: nobody could poll or cancel it.
			t.cancel(errRequestGone)
			<-t.done
			st.remove(t)
			return nil
		case <-timer:
		}
	}
	t.mu.Lock()
	finished := t.status != taskWorking
	if !finished {
		t.revealed = true
	}
	t.mu.Unlock()
	if finished {
		return s.directResult(m.ID, t)
	}
	b := append(responseBuffer(512+len(m.ID)), `{"jsonrpc":"2.0","id":`...)
	b = append(b, m.ID...)
	b = append(b, `,"result":`...)
	b = t.appendJSON(b, "task", false)
	return append(b, '}')
}

// directResult answers the call with the result of its task, which
// finished before it was announced and is dropped. A task that ended
// without a result (the store shut down under it) is an internal error.
func (s *Server) directResult(id json.RawMessage, t *task) []byte {
	t.st.remove(t)
	t.mu.Lock()
	res, status, msg := t.result, t.status, t.message
	t.mu.Unlock()
	if status != taskCompleted {
		return appendError(nil, id, CodeInternalError, "Internal error: "+msg, nil)
	}
	b := append(responseBuffer(len(res)+len(id)+32), `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, res...)
	return append(b, '}')
}

// taskDone counts one of this Server's tasks as finished and, after the
// last one, runs what releaseWhenIdle left to run.
func (s *Server) taskDone() {
	s.mu.Lock()
	s.tasksRunning--
	var idle func()
	if s.tasksRunning == 0 {
		idle, s.idle = s.idle, nil
	}
	s.mu.Unlock()
	if idle != nil {
		idle()
	}
}

// releaseWhenIdle runs release now, or once the tasks this Server started
// have all finished: what a transport made for one request (an HTTP
// request's scope) must outlive it while a task of it runs.
func (s *Server) releaseWhenIdle(release func()) {
	s.mu.Lock()
	if s.tasksRunning > 0 {
		prev := s.idle
		s.idle = func() {
			if prev != nil {
				prev()
			}
			release()
		}
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	release()
}

// taskRequest checks a tasks/* request: the server keeps tasks, the
// request declares the extension, params.taskId is a string naming one of
// this owner's tasks. It returns the task, or the error response.
func (s *Server) taskRequest(m *Message) (*task, []byte) {
	if s.opts.Tasks == nil {
		return nil, appendError(nil, m.ID, CodeMethodNotFound, "Method not found", nil)
	}
	if !requestDeclaresTasks(m) {
		return nil, appendError(nil, m.ID, codeMissingCapability,
			"Missing required client capability: "+m.Method+" needs the "+TasksExtension+" extension declared in this request's _meta clientCapabilities",
			missingTasksCapability)
	}
	var id string
	ok := false
	jsonraw.ScanObject(m.Params, func(k, v []byte) {
		if string(k) == "taskId" {
			id, ok = jsonraw.String(v)
		}
	})
	if !ok {
		return nil, appendError(nil, m.ID, CodeInvalidParams, "Invalid params: taskId must be a string", nil)
	}
	t := s.opts.Tasks.lookup(s.opts.TaskOwner, id)
	if t == nil {
		return nil, appendError(nil, m.ID, CodeInvalidParams, "Failed to retrieve task: Task not found", nil)
	}
	return t, nil
}

// tasksGet answers tasks/get with the task: its status, its output so far
// while it runs (in statusMessage), its result once completed.
func (s *Server) tasksGet(m *Message) []byte {
	t, errResp := s.taskRequest(m)
	if t == nil {
		return errResp
	}
	b := append(responseBuffer(1024+len(m.ID)), `{"jsonrpc":"2.0","id":`...)
	b = append(b, m.ID...)
	b = append(b, `,"result":`...)
	b = t.appendJSON(b, "complete", true)
	return append(b, '}')
}

// ackResponse is the empty acknowledgement of tasks/update and
// tasks/cancel.
var ackResult = json.RawMessage(`{"resultType":"complete"}`)

// tasksUpdate acknowledges tasks/update: the tasks of this server never
// wait for input, so every inputResponses entry is one that is not
// outstanding, which the extension says to ignore.
func (s *Server) tasksUpdate(m *Message) []byte {
	if t, errResp := s.taskRequest(m); t == nil {
		return errResp
	}
	return appendResponse(nil, m.ID, ackResult)
}

// tasksCancel asks the task to stop and acknowledges at once; the task
// shows cancelled once its run has returned (for exec: once the command's
// process group is killed and the command reaped). Cancelling a finished
// task, or one already being cancelled, is acknowledged and changes
// nothing.
func (s *Server) tasksCancel(m *Message) []byte {
	t, errResp := s.taskRequest(m)
	if t == nil {
		return errResp
	}
	t.requestCancel()
	return appendResponse(nil, m.ID, ackResult)
}
