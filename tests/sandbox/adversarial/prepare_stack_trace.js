// attack: Error.prepareStackTrace hook
// phase: producer
// expect: logic_error:TypeError
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    Error.prepareStackTrace = () => { for (;;) {} };
    throw new Error('x');
  } } },
});
