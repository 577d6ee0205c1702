package chart_test

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/rlsim/rlsim/render/chart"
)

// Drawing another experiment's result: a series per strategy against a reference line.
func ExampleEffectiveLimitFigure() {
	fig := chart.EffectiveLimitFigure(
		chart.Meta{Title: "local limits after a scale-out", Caption: "scenario scale-out · seed 1 · policy 100 per 1m0s"},
		"nodes",
		[]chart.Series{{Name: "L per node", Points: []chart.Point{{X: 1, Y: 100}, {X: 5, Y: 500}, {X: 10, Y: 1000}}}},
		100,
	)
	var svg bytes.Buffer
	if err := fig.Render(&svg, "svg"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(fig.Name, strings.Contains(svg.String(), ">advertised (100)<"), strings.Contains(svg.String(), ">nodes<"))
	// Output: effective-limit true true
}

func ExampleDownsample() {
	var pts []chart.Point
	for i := range 10 {
		pts = append(pts, chart.Point{X: float64(i), Y: float64(i)})
	}
	fmt.Println(chart.Downsample(pts, 4, chart.Max))
	// Output: [{0 2} {3 5} {6 8} {9 9}]
}
