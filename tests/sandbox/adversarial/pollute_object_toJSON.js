// attack: Object.prototype.toJSON override
// phase: producer
// expect: logic_error:TypeError
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    Object.prototype.toJSON = () => 'POLLUTED';
    return {a: 1};
  } } },
});
