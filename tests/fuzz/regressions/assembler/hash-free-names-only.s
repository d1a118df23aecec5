.layer a
sync q=load
.layer b
finish
