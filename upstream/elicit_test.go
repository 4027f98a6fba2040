package upstream_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// Over Streamable HTTP, a server's elicitation arrives on the stream of the
// call that caused it: two calls that elicit at the same time each get
// their own question, and each answer reaches its own call.
func TestConcurrentElicitationsReachTheirOwnCalls(t *testing.T) {
	srv := testserver.StartHTTP(t)
	s, _ := newSession(t, &sb.ServerConfig{Name: "test", Transport: sb.TransportStreamableHTTP, URL: srv.URL}, nil)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Both questions must be open at once: each handler waits for the other.
	var asked sync.WaitGroup
	asked.Add(2)
	bothAsked := make(chan struct{})
	go func() { asked.Wait(); close(bothAsked) }()

	var wg sync.WaitGroup
	results := make([]string, 2)
	questions := make([]string, 2)
	errs := make([]error, 2)
	for i, who := range []string{"alice", "bob"} {
		wg.Go(func() {
			res, err := s.CallTool(context.Background(), "elicit", map[string]any{"message": "question for " + who}, sb.InvokeOptions{
				Timeout: 20 * time.Second,
				OnElicitation: func(ctx context.Context, req sb.ElicitationRequest) (sb.ElicitationResponse, error) {
					questions[i] = req.Message
					asked.Done()
					select {
					case <-bothAsked:
					case <-time.After(10 * time.Second):
						return sb.ElicitationResponse{}, fmt.Errorf("the other question never came")
					}
					return sb.ElicitationResponse{Action: "accept", Content: map[string]any{"answer": who}}, nil
				},
			})
			if err != nil {
				errs[i] = err
				return
			}
			results[i] = res.MustDecode().Content[0].(*mcp.TextContent).Text
		})
	}
	wg.Wait()
	for i, who := range []string{"alice", "bob"} {
		if errs[i] != nil {
			t.Errorf("%s's call: %v", who, errs[i])
			continue
		}
		if questions[i] != "question for "+who || results[i] != "answer: "+who {
			t.Errorf("%s's call was asked %q and got %q; want its own question and answer", who, questions[i], results[i])
		}
	}
}
