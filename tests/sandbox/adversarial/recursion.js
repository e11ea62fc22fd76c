// attack: unbounded recursion
// phase: producer
// expect: limit_exceeded:stack
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    function f() { return f() + 1; }
    return f();
  } } },
});
