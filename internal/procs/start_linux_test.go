package procs

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// TestStartOutlivesForkingThread starts a command from a goroutine locked
// to its thread, which then exits, and Go ends the thread: the command
// must live on, as the process that started it does.
func TestStartOutlivesForkingThread(t *testing.T) {
	cmd := exec.Command("sleep", testenv.SleepMarker())
	type started struct {
		tid int
		err error
	}
	var st started
	for {
		ch := make(chan started)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			if tid := unix.Gettid(); tid == os.Getpid() {
				ch <- started{tid: tid} // the main thread is never ended: try another
				return
			}
			ch <- started{unix.Gettid(), Start(cmd)}
		}()
		if st = <-ch; st.tid != os.Getpid() {
			break
		}
	}
	if st.err != nil {
		t.Fatal(st.err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(st.tid)); err != nil {
			break // the thread is gone
		}
		if time.Now().After(deadline) {
			t.Fatal("the locked thread did not end")
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("the command died with the thread that started it: %v", err)
	case <-time.After(time.Second):
	}
	cmd.Process.Kill()
	<-done
}

// TestStartDiesWithProcess: a process killed with SIGKILL (no code of its
// own runs) takes the commands it started with it.
func TestStartDiesWithProcess(t *testing.T) {
	marker := testenv.SleepMarker()
	helper := exec.Command(os.Args[0], "-test.run=^TestStartHelper$")
	helper.Env = append(os.Environ(), "PROCS_START_HELPER="+marker)
	out, _ := helper.StdoutPipe()
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "started ") {
		helper.Process.Kill()
		helper.Wait()
		t.Fatalf("helper: %q %v", line, err)
	}
	helper.Process.Kill()
	helper.Wait()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if left = testenv.ProcessesWith(marker); len(left) == 0 {
			return
		}
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "started ")))
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("the command outlived its parent: %q", left)
}

// TestStartHelper is the process TestStartDiesWithProcess kills.
func TestStartHelper(t *testing.T) {
	marker := os.Getenv("PROCS_START_HELPER")
	if marker == "" {
		t.Skip("run by TestStartDiesWithProcess")
	}
	cmd := exec.Command("sleep", marker)
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("started %d\n", cmd.Process.Pid)
	time.Sleep(time.Minute)
}

// BenchmarkStartTrue and BenchmarkCmdStartTrue start and wait for
// /bin/true from parallel goroutines, through Start (one forking thread)
// and through exec.Cmd.Start (any thread), side by side.
func BenchmarkStartTrue(b *testing.B)    { benchStart(b, Start) }
func BenchmarkCmdStartTrue(b *testing.B) { benchStart(b, (*exec.Cmd).Start) }

func benchStart(b *testing.B, start func(*exec.Cmd) error) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			cmd := exec.Command("/bin/true")
			if err := start(cmd); err != nil {
				b.Fatal(err)
			}
			cmd.Wait()
		}
	})
}
