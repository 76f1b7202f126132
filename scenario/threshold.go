package scenario

import (
	"fmt"
	"strings"
)

// checkThresholds refuses empty threshold expressions. The syntax and the paths of the
// others are bench's to check (bench.CheckThresholdPaths): the result document is its type.
func (s *Scenario) checkThresholds(l *errList) {
	for i, e := range s.Thresholds {
		if strings.TrimSpace(e) == "" {
			l.Add(fmt.Sprintf("thresholds[%d]", i), "empty (want PATH OP NUMBER, e.g. \"messages.lost==0\")")
		}
	}
}
