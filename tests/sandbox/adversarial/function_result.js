// attack: returning a function
// phase: producer
// expect: logic_error:not JSON
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return () => 1;
  } } },
});
