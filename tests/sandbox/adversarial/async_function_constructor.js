// attack: AsyncFunction constructor
// phase: producer
// expect: logic_error:EvalError
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return await (async () => {}).constructor('return 1')();
  } } },
});
