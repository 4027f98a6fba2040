package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
)

// RunInfo identifies one run of a merged report.
type RunInfo struct {
	Date   string       `json:"date"`
	Commit string       `json:"commit"`
	Load   []LoadSample `json:"load,omitempty"`
}

// ReadReport reads a report written as JSON by the driver (-json).
func ReadReport(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Merge pools the repetitions of several runs, made with the same
// configuration, into one report, so that a figure's median and spread
// cover them all. Every repetition keeps its
// pairing: a ratio still divides figures measured moments apart in the
// same run. Overhead and endpoint samples, recovery iterations and
// slow-tool runs are concatenated; scale and daemon-scale results are kept
// side by side (Run numbers them);
// the allocation profiles, which count rather than time, are the last
// run's. The environment is the last run's, and Runs lists them all.
func Merge(reports ...*Report) (*Report, error) {
	if len(reports) == 0 {
		return nil, errors.New("nothing to merge")
	}
	last := reports[len(reports)-1]
	m := &Report{Env: last.Env, Config: last.Config, Profiles: last.Profiles, EndpointInfo: last.EndpointInfo}
	m.Config.Reps, m.Config.RecoveryIters, m.Config.EndpointReps = 0, 0, 0
	overhead := map[[2]string]*OverheadResult{}
	endpoint := map[[2]string]*OverheadResult{}
	slow := map[[2]string]*SlowResult{}
	for i, r := range reports {
		m.Runs = append(m.Runs, RunInfo{Date: r.Env.Date.Format("2006-01-02 15:04 MST"), Commit: r.Env.Commit, Load: r.Load})
		m.Elapsed += r.Elapsed
		reps := 0
		for _, o := range r.Overhead {
			key := [2]string{o.Transport, o.Mode}
			into := overhead[key]
			if into == nil {
				into = &OverheadResult{Transport: o.Transport, Mode: o.Mode, Callers: o.Callers, Sides: o.Sides, Samples: map[string][]Sample{}}
				overhead[key] = into
				m.Overhead = append(m.Overhead, into)
			}
			if !slices.Equal(into.Sides, o.Sides) {
				return nil, fmt.Errorf("run %d: %s %s has sides %v, not %v", i+1, o.Transport, o.Mode, o.Sides, into.Sides)
			}
			for _, side := range o.Sides {
				into.Samples[side] = append(into.Samples[side], o.Samples[side]...)
				reps = max(reps, len(o.Samples[side]))
			}
		}
		m.Config.Reps += reps
		if rc := r.Recovery; rc != nil {
			if m.Recovery == nil {
				m.Recovery = &RecoveryResult{CallErrors: map[string]int{}}
			}
			mr := m.Recovery
			mr.Iterations += rc.Iterations
			m.Config.RecoveryIters += max(rc.Iterations, len(rc.Baseline))
			mr.Detect = append(mr.Detect, rc.Detect...)
			mr.Reconnect = append(mr.Reconnect, rc.Reconnect...)
			mr.CallFail = append(mr.CallFail, rc.CallFail...)
			mr.Baseline = append(mr.Baseline, rc.Baseline...)
			mr.BaselineList = append(mr.BaselineList, rc.BaselineList...)
			mr.Failures = append(mr.Failures, rc.Failures...)
			for k, n := range rc.CallErrors {
				mr.CallErrors[k] += n
			}
		}
		for _, s := range r.Slow {
			key := [2]string{s.Transport, s.Side}
			into := slow[key]
			if into == nil {
				c := *s
				c.Runs = nil
				into = &c
				slow[key] = into
				m.Slow = append(m.Slow, into)
			}
			into.Runs = append(into.Runs, s.Runs...)
		}
		for _, sc := range r.Scale {
			c := *sc
			c.Run = i + 1
			m.Scale = append(m.Scale, &c)
		}
		reps, err := poolOverhead(&m.Endpoint, endpoint, r.Endpoint, i+1)
		if err != nil {
			return nil, err
		}
		m.Config.EndpointReps += reps
		for _, d := range r.Daemon {
			c := *d
			c.Run = i + 1
			m.Daemon = append(m.Daemon, &c)
		}
	}
	if len(m.Slow) > 0 {
		m.Config.SlowReps = len(m.Slow[0].Runs)
	}
	for _, o := range m.Overhead {
		for _, side := range slices.Sorted(maps.Keys(o.Samples)) {
			if len(o.Samples[side]) != m.Config.Reps {
				return nil, fmt.Errorf("%s %s: %d samples of %s, %d of others", o.Transport, o.Mode, len(o.Samples[side]), side, m.Config.Reps)
			}
		}
	}
	for _, o := range m.Endpoint {
		for _, side := range slices.Sorted(maps.Keys(o.Samples)) {
			if len(o.Samples[side]) != m.Config.EndpointReps {
				return nil, fmt.Errorf("endpoint %d B %s: %d samples of %s, %d of others", o.Payload, o.Mode, len(o.Samples[side]), side,
					m.Config.EndpointReps)
			}
		}
	}
	return m, nil
}

// poolOverhead appends the samples of results (run number run) to the
// pooled results in into, keyed by payload and mode, creating them in
// byKey the first time; it returns the run's number of repetitions.
func poolOverhead(into *[]*OverheadResult, byKey map[[2]string]*OverheadResult, results []*OverheadResult, run int) (int, error) {
	reps := 0
	for _, o := range results {
		key := [2]string{fmt.Sprint(o.Payload), o.Mode}
		pooled := byKey[key]
		if pooled == nil {
			pooled = &OverheadResult{Transport: o.Transport, Mode: o.Mode, Callers: o.Callers, Payload: o.Payload, Sides: o.Sides,
				Samples: map[string][]Sample{}}
			byKey[key] = pooled
			*into = append(*into, pooled)
		}
		if !slices.Equal(pooled.Sides, o.Sides) {
			return 0, fmt.Errorf("run %d: endpoint %d B %s has sides %v, not %v", run, o.Payload, o.Mode, o.Sides, pooled.Sides)
		}
		for _, side := range o.Sides {
			pooled.Samples[side] = append(pooled.Samples[side], o.Samples[side]...)
			reps = max(reps, len(o.Samples[side]))
		}
	}
	return reps, nil
}
