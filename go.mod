module github.com/agentbe/agent-backend

go 1.25
