//go:build !linux

package sink

import "time"

func (h *handler) loopCPU() time.Duration { return 0 }

func threadCPU(int64) time.Duration { return 0 }
