// A DEPTH-cycle delay line (DEPTH = 0: a wire). Skews the array's inputs and
// de-skews its outputs.
module ember_me_delay #(
    parameter int WIDTH = 8,
    parameter int DEPTH = 1
) (
    input  logic             clk,
    input  logic [WIDTH-1:0] d,
    output logic [WIDTH-1:0] q
);
  if (DEPTH == 0) begin : g_wire
    assign q = d;
    logic unused_clk;  // no register: the clock is not needed
    assign unused_clk = clk;
  end else begin : g_regs
    logic [WIDTH-1:0] stage[DEPTH];
    always_ff @(posedge clk) stage[0] <= d;
    for (genvar i = 1; i < DEPTH; i++) begin : g_stage
      always_ff @(posedge clk) stage[i] <= stage[i-1];
    end
    assign q = stage[DEPTH-1];
  end
endmodule
