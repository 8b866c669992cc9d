package main

// The quickstart prints the same tables on every run; this pins them.
func Example() {
	main()
	// Output:
	// Worked example: Rate 1/s, Burst 2 (a full bucket holds 2 tokens)
	//
	//   request     at  decision  remaining  retry after  reset after
	//         A  100ms   allowed          1            -           1s
	//         B  100ms   allowed          0            -           2s
	//         C  100ms    DENIED          0           1s           2s
	//         D   1.5s   allowed          0            -         1.6s
	//
	// Burst: PerSecond(5), twelve requests at once, then two late ones
	//
	//   request     at  decision  remaining  retry after  reset after
	//        r1     0s   allowed          4            -        200ms
	//        r2     0s   allowed          3            -        400ms
	//        r3     0s   allowed          2            -        600ms
	//        r4     0s   allowed          1            -        800ms
	//        r5     0s   allowed          0            -           1s
	//        r6     0s    DENIED          0        200ms           1s
	//        r7     0s    DENIED          0        200ms           1s
	//        r8     0s    DENIED          0        200ms           1s
	//        r9     0s    DENIED          0        200ms           1s
	//       r10     0s    DENIED          0        200ms           1s
	//       r11     0s    DENIED          0        200ms           1s
	//       r12     0s    DENIED          0        200ms           1s
	//       r13  200ms   allowed          0            -           1s
	//       r14     1s   allowed          3            -        400ms
	//
}
