package backoff

import (
	"reflect"
	"testing"
)

func TestWaves(t *testing.T) {
	tests := []struct {
		series    []int64
		threshold int64
		want      []int64
	}{
		{nil, 5, nil},
		{[]int64{0, 0, 1000, 0, 0, 0, 0, 600, 300, 0, 0, 250}, 10, []int64{1000, 600, 250}},
		{[]int64{3, 4, 5, 4, 3, 2}, 10, nil},
		{[]int64{3, 4, 5, 4, 3, 2}, 0, []int64{5}},
		{[]int64{12, 9, 12}, 10, []int64{12, 12}},
	}
	for _, tt := range tests {
		if got := Waves(tt.series, tt.threshold); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Waves(%v, %d) = %v, want %v", tt.series, tt.threshold, got, tt.want)
		}
	}
}
