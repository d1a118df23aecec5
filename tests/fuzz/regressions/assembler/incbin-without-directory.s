.incbin /dev/zero
finish
