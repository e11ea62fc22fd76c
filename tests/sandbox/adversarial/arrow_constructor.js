// attack: constructor of an arrow function
// phase: producer
// expect: logic_error:EvalError
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return (() => {}).constructor('return 1')();
  } } },
});
