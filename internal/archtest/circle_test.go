package archtest

import (
	"slices"
	"testing"
)

// TestCircle specifies circle, so a broken search cannot pass TestDrawing vacuously.
func TestCircle(t *testing.T) {
	tests := []struct {
		name string
		rows []room
		want []string
	}{
		// A chain and a room importing itself point one way.
		{"chain", []room{{"a", []string{"b", "a"}}, {"b", []string{"c"}}, {"c", nil}}, nil},
		// A room that imports every room stands outside the graph.
		{"every room", []room{{"a", []string{"b"}}, {"b", nil}, {"e", []string{everyRoom}}}, nil},
		// Two rooms importing each other are a circle, named from where it closes.
		{"circle", []room{{"a", []string{"b"}}, {"b", []string{"c"}}, {"c", []string{"a"}}}, []string{"a", "b", "c", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := circle(tt.rows); !slices.Equal(got, tt.want) {
				t.Errorf("circle = %q, want %q", got, tt.want)
			}
		})
	}
}

// circle returns a path of rows that comes back to its start, or nil when the arrows point one
// way. A room's import of itself is no circle.
func circle(rows []room) []string {
	next := make(map[string][]string, len(rows))
	for _, r := range rows {
		next[r.name] = r.imports
	}
	const (
		unseen = iota
		onPath
		done
	)
	state := make(map[string]int)
	var path []string
	var visit func(string) []string
	visit = func(n string) []string {
		state[n] = onPath
		path = append(path, n)
		for _, m := range next[n] {
			if m == n || m == everyRoom {
				continue
			}
			switch state[m] {
			case onPath:
				i := slices.Index(path, m)
				return append(slices.Clone(path[i:]), m)
			case unseen:
				if c := visit(m); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return nil
	}
	for _, r := range rows {
		if state[r.name] == unseen {
			if c := visit(r.name); c != nil {
				return c
			}
		}
	}
	return nil
}
