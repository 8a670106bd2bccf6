module github.com/agentbe/agent-backend/internal/fstools/unicodegen

go 1.26.0

require golang.org/x/text v0.44.0
