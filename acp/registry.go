package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// ErrUnknownAgent is wrapped by errors about an agent id the registry does
// not know.
var ErrUnknownAgent = errors.New("unknown agent")

// Agent describes one ACP agent the proxy can launch and install. Commands
// run through the request's backend (agentbe.Backend.Exec) in the backend's
// root directory: the daemon's isolation mode, its dangerous-command check
// and its clean environment apply to them.
type Agent struct {
	// ID is the value of ?agent= and of /v1/agents/{agent}.
	ID string `json:"id"`
	// Command starts the agent's ACP server on stdin/stdout
	// (newline-delimited JSON-RPC), e.g. "node .agents/my-agent.mjs".
	Command string `json:"command"`
	// Install installs the agent; empty means there is nothing to install.
	Install string `json:"install,omitempty"`
	// Check is a path (relative to the backend root) whose existence means
	// the agent is installed. Empty means "installed" whenever Install is
	// empty, and "unknown, treated as not installed" otherwise.
	Check string `json:"check,omitempty"`
	// HostEnv names variables of the daemon's environment passed to the
	// agent (e.g. its provider API key). Nothing else of the daemon's
	// environment reaches it, and Config.SecretEnv names are never passed.
	HostEnv []string `json:"hostEnv,omitempty"`
	// Env is added to the agent's environment.
	Env map[string]string `json:"env,omitempty"`
	// Capabilities is reported by GET /v1/agents as is.
	Capabilities Capabilities `json:"capabilities"`
}

// Capabilities mirrors sandbox-agent's AgentCapabilities object.
type Capabilities struct {
	PlanMode         bool `json:"planMode"`
	Permissions      bool `json:"permissions"`
	Questions        bool `json:"questions"`
	ToolCalls        bool `json:"toolCalls"`
	ToolResults      bool `json:"toolResults"`
	TextMessages     bool `json:"textMessages"`
	Images           bool `json:"images"`
	FileAttachments  bool `json:"fileAttachments"`
	SessionLifecycle bool `json:"sessionLifecycle"`
	ErrorEvents      bool `json:"errorEvents"`
	Reasoning        bool `json:"reasoning"`
	Status           bool `json:"status"`
	CommandExecution bool `json:"commandExecution"`
	FileChanges      bool `json:"fileChanges"`
	McpTools         bool `json:"mcpTools"`
	StreamingDeltas  bool `json:"streamingDeltas"`
	ItemStarted      bool `json:"itemStarted"`
	SharedProcess    bool `json:"sharedProcess"`
}

// Registry is a concurrency-safe set of agents keyed by ID.
type Registry struct {
	mu     sync.RWMutex
	agents map[string]Agent
}

// NewRegistry returns a registry holding agents (a later duplicate ID
// replaces an earlier one). It fails on an invalid agent.
func NewRegistry(agents ...Agent) (*Registry, error) {
	r := &Registry{agents: map[string]Agent{}}
	for _, a := range agents {
		if err := r.Set(a); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// DefaultRegistry returns a registry of BuiltinAgents.
func DefaultRegistry() *Registry {
	r, err := NewRegistry(BuiltinAgents()...)
	if err != nil {
		panic(err) // the built-ins are valid by construction
	}
	return r
}

// Set adds or replaces a.
func (r *Registry) Set(a Agent) error {
	if err := validAgentID(a.ID); err != nil {
		return err
	}
	if strings.TrimSpace(a.Command) == "" {
		return fmt.Errorf("acp: agent %q: empty command", a.ID)
	}
	for _, k := range a.HostEnv {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("acp: agent %q: bad host variable name %q", a.ID, k)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.agents[a.ID] = a
	return nil
}

// Get returns the agent with that ID.
func (r *Registry) Get(id string) (Agent, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.agents[id]
	return a, ok
}

// List returns every agent, sorted by ID.
func (r *Registry) List() []Agent {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Agent, 0, len(r.agents))
	for _, a := range r.agents {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ParseAgentFlag parses the --acp-agent flag value "id=command", e.g.
// "mine=node .agents/mine.mjs".
func ParseAgentFlag(v string) (Agent, error) {
	id, cmd, ok := strings.Cut(v, "=")
	if !ok {
		return Agent{}, fmt.Errorf("acp: --acp-agent %q: want id=command", v)
	}
	a := Agent{ID: strings.TrimSpace(id), Command: strings.TrimSpace(cmd)}
	if err := validAgentID(a.ID); err != nil {
		return Agent{}, err
	}
	if a.Command == "" {
		return Agent{}, fmt.Errorf("acp: --acp-agent %q: empty command", v)
	}
	return a, nil
}

// ParseAgentsJSON parses an agents config file: a JSON array of Agent
// objects, e.g.
//
//	[{"id": "mine", "command": "node .agents/mine.mjs",
//	  "install": "npm install --prefix .agents/mine mine-acp",
//	  "check": ".agents/mine/node_modules/.bin/mine-acp",
//	  "hostEnv": ["MINE_API_KEY"], "env": {"MINE_MODE": "fast"}}]
//
// Unknown fields are an error (a typo must not silently drop a setting).
// Pass the result to Registry.Set, over DefaultRegistry() to extend or
// override the built-ins.
func ParseAgentsJSON(data []byte) ([]Agent, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var agents []Agent
	if err := dec.Decode(&agents); err != nil {
		return nil, fmt.Errorf("acp: agents config: %w", err)
	}
	if _, err := NewRegistry(agents...); err != nil {
		return nil, err
	}
	return agents, nil
}

func validAgentID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("acp: agent id %q: must be 1 to 64 characters", id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("acp: agent id %q: only letters, digits, '-', '_' and '.' are allowed", id)
		}
	}
	return nil
}

// BuiltinAgents are the agents known without configuration. Each installs
// its npm ACP adapter under .agentbe/agents/<id> in the backend root (the
// install needs network access to the npm registry) and gets its provider
// key from the daemon's environment.
func BuiltinAgents() []Agent {
	npmAgent := func(id, pkg, bin string, env ...string) Agent {
		dir := ".agentbe/agents/" + id
		exe := dir + "/node_modules/.bin/" + bin
		return Agent{ID: id, Command: "exec ./" + exe,
			Install: "npm install --no-audit --no-fund --prefix " + dir + " " + pkg,
			Check:   exe, HostEnv: env,
			Capabilities: Capabilities{ToolCalls: true, ToolResults: true, TextMessages: true,
				Permissions: true, McpTools: true, StreamingDeltas: true}}
	}
	return []Agent{
		npmAgent("claude", "@zed-industries/claude-agent-acp", "claude-agent-acp", "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"),
		npmAgent("codex", "@zed-industries/codex-acp", "codex-acp", "OPENAI_API_KEY", "CODEX_API_KEY"),
		npmAgent("amp", "amp-acp", "amp-acp", "AMP_API_KEY"),
		npmAgent("pi", "pi-acp", "pi-acp", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"),
	}
}
