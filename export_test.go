package agentbe

import "github.com/agentbe/agent-backend/internal/wspath"

func wspathResolveForTest(root, p string) (string, error) { return wspath.Resolve(root, p) }
