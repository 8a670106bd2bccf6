package watch

import "testing"

func TestSmoke(t *testing.T) {
	dir, r := tree(t)
	f := open(t, r, ".", nil)
	c := collect(t, f)
	write(t, join(dir, "a.txt"), "hi")
	c.untilOp(Created, "a.txt")
	c.untilOp(Written, "a.txt")
	mkdir(t, join(dir, "d"))
	c.untilOp(Created, "d")
	write(t, join(dir, "d", "x"), "x")
	c.untilOp(Created, "d/x")
	t.Log(c.dump())
}
