// attack: awaiting a promise nobody settles
// phase: producer
// expect: logic_error:never finished
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    await new Promise(() => {});
  } } },
});
