package gateway

import "testing"

func TestTemplatesOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"file:///repo/{+path}", "file:///repo/s{+x}", true},
		{"file:///repo/{+path}", "file:///repo/{+path}", true},
		{"file:///repo/{+path}", "file:///other/{+path}", false},
		{"db://{table}.json", "db://{table}.csv", false},
		{"db://{table}.json", "db://users{x}", true},
		{"test://items/{id}", "test://items/42", true},
		{"test://items/{id}", "test://hello", false},
	} {
		if got := templatesOverlap(tc.a, tc.b); got != tc.want {
			t.Errorf("templatesOverlap(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := templatesOverlap(tc.b, tc.a); got != tc.want {
			t.Errorf("templatesOverlap(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}
