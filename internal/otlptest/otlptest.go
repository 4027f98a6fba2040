// Package otlptest is a small OTLP/HTTP trace receiver for tests: a real
// HTTP server on 127.0.0.1 that takes what an OTLP exporter POSTs to
// /v1/traces (protobuf, gzip or not), decodes it with the OTLP proto
// package, and keeps the spans for the test to read.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one span as the receiver got it, its values as text.
type Span struct {
	TraceID, SpanID, ParentID string // hex; ParentID "" for a root span
	Name                      string
	Kind                      string // "server", "client", "internal", ...
	Attrs                     map[string]string
	Events                    []Event
	Resource                  map[string]string // the attributes of its resource
	StatusError               bool              // its status is Error
}

// Event is one event of a span.
type Event struct {
	Name  string
	Attrs map[string]string
}

// HasEvent reports whether s has an event named name.
func (s Span) HasEvent(name string) bool {
	for _, e := range s.Events {
		if e.Name == name {
			return true
		}
	}
	return false
}

// Receiver is a running receiver.
type Receiver struct {
	// URL is the base URL to give the exporter as its endpoint
	// (OTEL_EXPORTER_OTLP_ENDPOINT); the spans are POSTed to URL/v1/traces.
	URL string

	mu    sync.Mutex
	spans []Span
}

// Start starts a receiver, closed when the test ends.
func Start(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Trace returns the spans received so far of the trace id (hex).
func (r *Receiver) Trace(traceID string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, fmt.Sprintf("content type %q: this receiver reads protobuf", ct), http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, req.Body, 16<<20)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range msg.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s := Span{
					TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
					Name: sp.GetName(), Attrs: attrs(sp.GetAttributes()), Resource: res,
					StatusError: sp.GetStatus().GetCode() == 2, // STATUS_CODE_ERROR
				}
				if p := sp.GetParentSpanId(); len(p) > 0 {
					s.ParentID = hex.EncodeToString(p)
				}
				s.Kind = kinds[int32(sp.GetKind())]
				for _, e := range sp.GetEvents() {
					s.Events = append(s.Events, Event{Name: e.GetName(), Attrs: attrs(e.GetAttributes())})
				}
				got = append(got, s)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

var kinds = map[int32]string{0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}

// attrs renders attributes as text: strings as they are, numbers and
// booleans in Go's notation.
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = v.GetStringValue()
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = strconv.FormatInt(v.GetIntValue(), 10)
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = strconv.FormatBool(v.GetBoolValue())
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = strconv.FormatFloat(v.GetDoubleValue(), 'g', -1, 64)
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}
