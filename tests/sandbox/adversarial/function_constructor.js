// attack: Function constructor
// phase: producer
// expect: logic_error:EvalError
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return Function('return globalThis')();
  } } },
});
