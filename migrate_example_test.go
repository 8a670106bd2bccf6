package agentbe_test

import (
	"fmt"
	"log"

	agentbe "github.com/agentbe/agent-backend"
)

// A fourth replica joins three: the tenants it wins move to it, and only
// they do. Migrate then copies their directories (see docs/scaling.md).
func ExamplePlanMigration() {
	from := []string{"agentbe-0.agentbe:3001", "agentbe-1.agentbe:3001", "agentbe-2.agentbe:3001"}
	to := []string{"agentbe-0.agentbe:3001", "agentbe-1.agentbe:3001", "agentbe-2.agentbe:3001", "agentbe-3.agentbe:3001"}
	keys := []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"}
	plan, err := agentbe.PlanMigration(from, to, keys, "tenants")
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range plan.Moves {
		fmt.Printf("%s: %s -> %s\n", m.Scope, m.From, m.To)
	}
	fmt.Println(plan.Kept, "stay")
	// Output:
	// tenants/carol: agentbe-1.agentbe:3001 -> agentbe-3.agentbe:3001
	// tenants/erin: agentbe-2.agentbe:3001 -> agentbe-3.agentbe:3001
	// tenants/grace: agentbe-2.agentbe:3001 -> agentbe-3.agentbe:3001
	// 5 stay
}
